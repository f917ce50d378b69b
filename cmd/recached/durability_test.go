package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/snapshot"
)

// TestAckedWritesSurviveKill: whatever the fsync policy, the log is written
// to the system before a reply leaves, so SIGKILL (the process dies, the
// kernel keeps the page cache) loses no acknowledged write. Redis gives the
// same promise; only a system crash may lose the last second under everysec.
func TestAckedWritesSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	bin := build(t)
	const rounds, perRound = 5, 3000
	for _, fsync := range []string{"everysec", "no", "always"} {
		t.Run(fsync, func(t *testing.T) {
			dir := t.TempDir()
			a := &acked{vals: map[string]string{}}
			for round := 0; round < rounds; round++ {
				p := startIn(t, bin, dir, "--appendfsync", fsync)
				verify(t, p.addr, a)
				if t.Failed() {
					t.Fatalf("round %d: acknowledged writes lost after kill -9", round)
				}
				stop := make(chan struct{})
				start := a.n.Load()
				wg := writers(t, p.addr, 4, 10, stop, a, fmt.Sprintf("r%d:", round))
				deadline := time.Now().Add(30 * time.Second)
				for a.n.Load() < start+perRound && time.Now().Before(deadline) {
					time.Sleep(2 * time.Millisecond)
				}
				// Kill while the writers are still going.
				p.kill(t)
				close(stop)
				wg.Wait()
				if a.n.Load() < start+perRound {
					t.Fatalf("round %d: only %d writes acknowledged", round, a.n.Load()-start)
				}
			}
			p := startIn(t, bin, dir, "--appendfsync", fsync)
			verify(t, p.addr, a)
			t.Logf("%d acknowledged writes survived %d kills", a.n.Load(), rounds)
		})
	}
}

// logHolds reports whether the append-only log at path holds a command
// record equal to want (in database 0). The file may end in a record being
// written: that one is not whole and does not count.
func logHolds(t *testing.T, path string, want []string) bool {
	t.Helper()
	r, f, err := snapshot.OpenLog(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return false
		}
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		if rec.IsMark || rec.DB != 0 || len(rec.Args) != len(want) {
			continue
		}
		same := true
		for i, a := range rec.Args {
			if !strings.EqualFold(string(a), want[i]) {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
}

// pushArgs returns the elements of a RESP3 push frame as strings, or nil
// when frame is not a push.
func pushArgs(t *testing.T, frame []byte) []string {
	t.Helper()
	if len(frame) == 0 || frame[0] != '>' {
		return nil
	}
	els, err := servertest.Elements(frame)
	if err != nil {
		t.Fatalf("push %q: %v", frame, err)
	}
	out := make([]string, len(els))
	for i, e := range els {
		// Each element is a bulk string: $<n>\r\n<bytes>\r\n.
		if i := bytes.IndexByte(e, '\n'); i >= 0 && e[0] == '$' {
			e = e[i+1 : len(e)-2]
		}
		out[i] = string(e)
	}
	return out
}

// TestPushesFollowTheLog: a subscriber that receives a mutation push for a
// write finds the write's record already in the log file (under always the
// record is fsynced before the push leaves; the test sees the write that
// precedes the fsync). The writes come from a pipelining client and from
// the active expiry cron, which deletes keys nobody touches.
func TestPushesFollowTheLog(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := build(t)
	for _, fsync := range []string{"everysec", "always"} {
		t.Run(fsync, func(t *testing.T) {
			dir := t.TempDir()
			p := startIn(t, bin, dir, "--appendfsync", fsync)
			logPath := filepath.Join(dir, snapshot.LogName(0))
			sub := servertest.Dial(t, p.addr)
			if rep, err := sub.Do("HELLO", "3"); err != nil || !bytes.HasPrefix(rep, []byte("%")) {
				t.Fatalf("HELLO 3: %q %v", rep, err)
			}
			if rep, err := sub.Do("SYNC", "p:*", "e:*"); err != nil || string(rep) != "+OK\r\n" {
				t.Fatalf("SYNC: %q %v", rep, err)
			}
			// Keys for the expiry cron, then a long pipeline of SETs.
			w := servertest.Dial(t, p.addr)
			const expiring, sets = 20, 2000
			var batch bytes.Buffer
			for i := 0; i < expiring; i++ {
				batch.Write(servertest.Encode("SET", "e:"+strconv.Itoa(i), "v", "PX", "50"))
			}
			for i := 0; i < sets; i++ {
				batch.Write(servertest.Encode("SET", "p:"+strconv.Itoa(i%100), strconv.Itoa(i)))
			}
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := w.Send(batch.Bytes()); err != nil {
					t.Error(err)
					return
				}
				for i := 0; i < expiring+sets; i++ {
					if rep, err := w.Read(); err != nil || string(rep) != "+OK\r\n" {
						t.Errorf("reply %d: %q %v", i, rep, err)
						return
					}
				}
			}()
			// Check the log at a sample of the pushes, and at every DEL.
			checked, dels := 0, 0
			for n := 0; n < expiring*2+sets && dels < expiring; n++ {
				rep, err := sub.Read()
				if err != nil {
					t.Fatalf("after %d pushes (%d DELs): %v", n, dels, err)
				}
				args := pushArgs(t, rep)
				if len(args) == 0 {
					t.Fatalf("not a push: %q", rep)
				}
				isDel := strings.EqualFold(args[0], "DEL")
				if isDel {
					dels++
				}
				if !isDel && n%50 != 0 {
					continue
				}
				checked++
				if !logHolds(t, logPath, args) {
					t.Fatalf("push %d %q arrived before its record was in %s", n, args, snapshot.LogName(0))
				}
			}
			wg.Wait()
			if dels < expiring {
				t.Fatalf("%d expiry DEL pushes, want %d", dels, expiring)
			}
			t.Logf("%d pushes checked against the log, %d of them expiry DELs", checked, dels)
		})
	}
}

// TestPushedWriteSurvivesKill: SIGKILL the moment a subscriber receives a
// push; after the restart the pushed write is there.
func TestPushedWriteSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	bin := build(t)
	for _, fsync := range []string{"everysec", "always"} {
		t.Run(fsync, func(t *testing.T) {
			dir := t.TempDir()
			for round := 0; round < 5; round++ {
				p := startIn(t, bin, dir, "--appendfsync", fsync)
				sub := servertest.Dial(t, p.addr)
				if rep, err := sub.Do("HELLO", "3"); err != nil || !bytes.HasPrefix(rep, []byte("%")) {
					t.Fatalf("HELLO 3: %q %v", rep, err)
				}
				if rep, err := sub.Do("SYNC", "k:*"); err != nil || string(rep) != "+OK\r\n" {
					t.Fatalf("SYNC: %q %v", rep, err)
				}
				key, val := "k:"+strconv.Itoa(round), strings.Repeat("x", 100)
				w := servertest.Dial(t, p.addr)
				var batch bytes.Buffer
				for i := 0; i < 200; i++ {
					batch.Write(servertest.Encode("SET", "filler:"+strconv.Itoa(i), val))
				}
				batch.Write(servertest.Encode("SET", key, val))
				if err := w.Send(batch.Bytes()); err != nil {
					t.Fatal(err)
				}
				rep, err := sub.Read()
				if err != nil {
					t.Fatal(err)
				}
				p.kill(t)
				if args := pushArgs(t, rep); len(args) != 3 || args[1] != key {
					t.Fatalf("push %q", rep)
				}
				p2 := startIn(t, bin, dir, "--appendfsync", fsync)
				if got, err := servertest.Dial(t, p2.addr).Do("GET", key); err != nil || string(got) != fmt.Sprintf("$%d\r\n%s\r\n", len(val), val) {
					t.Fatalf("round %d: %s was pushed before the kill, after the restart GET says %q %v", round, key, got, err)
				}
				p2.kill(t)
			}
		})
	}
}

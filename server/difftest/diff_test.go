package difftest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// A script line is a command, optionally behind one directive:
//
//	!sort CMD ...      compare the reply's elements as a sorted multiset
//	!sortpairs CMD ... compare a map or flat pair list as sorted pairs
//	!type CMD ...      compare only the reply's type byte
//	!sleep MS          wait MS milliseconds (expiry tests)
//	!resp2only         (first line) run the file in RESP2 only
//	!resp3only         (first line) run the file in RESP3 only
//
// Lines starting with '#' and empty lines are ignored. Every file starts
// from empty databases on both servers.

type line struct {
	no   int
	mode string
	args []string
	ms   int
}

func parseScript(t *testing.T, path string) (lines []line, protos []int) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	protos = []int{2, 3}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	no := 0
	for sc.Scan() {
		no++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		l := line{no: no}
		switch {
		case text == "!resp2only":
			protos = []int{2}
			continue
		case text == "!resp3only":
			protos = []int{3}
			continue
		case strings.HasPrefix(text, "!sleep "):
			l.mode = "sleep"
			l.ms, _ = strconv.Atoi(strings.TrimSpace(text[len("!sleep "):]))
			lines = append(lines, l)
			continue
		case strings.HasPrefix(text, "!"):
			i := strings.IndexByte(text, ' ')
			if i < 0 {
				t.Fatalf("%s:%d: directive without a command", path, no)
			}
			l.mode, text = text[1:i], text[i+1:]
		}
		args, ok := resp.SplitArgs(nil, []byte(text))
		if !ok || len(args) == 0 {
			t.Fatalf("%s:%d: cannot split %q", path, no, text)
		}
		for _, a := range args {
			l.args = append(l.args, string(a))
		}
		lines = append(lines, l)
	}
	return lines, protos
}

func normalize(mode string, reply []byte) string {
	switch mode {
	case "type":
		return string(reply[:1])
	case "sort":
		els, _ := servertest.Elements(reply)
		keys := make([]string, len(els))
		for i, e := range els {
			keys[i] = string(e)
		}
		sort.Strings(keys)
		return string(reply[:1]) + strconv.Itoa(len(keys)) + "|" + strings.Join(keys, "")
	case "sortpairs":
		els, _ := servertest.Elements(reply)
		var pairs []string
		for i := 0; i+1 < len(els); i += 2 {
			pairs = append(pairs, string(els[i])+string(els[i+1]))
		}
		sort.Strings(pairs)
		return string(reply[:1]) + strconv.Itoa(len(pairs)) + "|" + strings.Join(pairs, "")
	}
	return string(reply)
}

func TestDifferential(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata: %v", err)
	}
	redisAddr := servertest.StartRedis(t)
	ourAddr, _ := servertest.StartRecached(t, server.DefaultConfig())
	total := 0
	for _, f := range files {
		lines, protos := parseScript(t, f)
		for _, proto := range protos {
			name := fmt.Sprintf("%s/resp%d", strings.TrimSuffix(filepath.Base(f), ".txt"), proto)
			t.Run(name, func(t *testing.T) {
				total += runScript(t, f, lines, proto, redisAddr, ourAddr)
			})
		}
	}
	t.Logf("%d differential cases compared", total)
}

func runScript(t *testing.T, file string, lines []line, proto int, redisAddr, ourAddr string) int {
	rc := servertest.Dial(t, redisAddr)
	oc := servertest.Dial(t, ourAddr)
	for _, c := range []*servertest.Client{rc, oc} {
		if proto == 3 {
			if _, err := c.Do("HELLO", "3"); err != nil {
				t.Fatal(err)
			}
		}
		if rep, err := c.Do("FLUSHALL"); err != nil || string(rep) != "+OK\r\n" {
			t.Fatalf("FLUSHALL: %q %v", rep, err)
		}
	}
	n := 0
	for _, l := range lines {
		if l.mode == "sleep" {
			time.Sleep(time.Duration(l.ms) * time.Millisecond)
			continue
		}
		want, err := rc.Do(l.args...)
		if err != nil {
			t.Fatalf("%s:%d %q: redis: %v", file, l.no, l.args, err)
		}
		got, err := oc.Do(l.args...)
		if err != nil {
			t.Fatalf("%s:%d %q: recached: %v (redis said %q)", file, l.no, l.args, err, want)
		}
		n++
		if normalize(l.mode, got) != normalize(l.mode, want) {
			t.Errorf("%s:%d %q\n redis:    %q\n recached: %q", file, l.no, l.args, want, got)
		}
	}
	return n
}

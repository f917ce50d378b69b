package server

import (
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/recached/recached/server/keyspace"
	recsync "github.com/recached/recached/sync"
)

// Helpers shared by the package's tests.

// toArgs returns a command's words as its arguments.
func toArgs(words ...string) [][]byte {
	b := make([][]byte, len(words))
	for i, w := range words {
		b[i] = []byte(w)
	}
	return b
}

// run runs one command on s and returns its reply: what it appended to W.
func run(s *Session, args ...string) string {
	s.W.B = s.W.B[:0]
	s.Exec(toArgs(args...))
	return string(s.W.B)
}

// psExec is run, by the name the sync tests know it.
func psExec(s *Session, args ...string) string { return run(s, args...) }

// scopedSession returns a new server with a token secret and a strict
// session of it, given by SYNC TOKEN the scope of patterns.
func scopedSession(tb testing.TB, patterns ...string) (*Server, *Session) {
	tb.Helper()
	cfg := DefaultConfig()
	cfg.TokenSecret = "sekrit"
	srv := New(cfg)
	s, err := srv.NewSession(nil, true)
	if err != nil {
		tb.Fatal(err)
	}
	tok, err := recsync.SignToken([]byte(cfg.TokenSecret), patterns, 0)
	if err != nil {
		tb.Fatal(err)
	}
	if rep := run(s, "SYNC", "TOKEN", tok); rep != "+OK\r\n" {
		tb.Fatalf("SYNC TOKEN: %q", rep)
	}
	return srv, s
}

// plainSession returns a session of a new server, without a transport.
func plainSession(tb testing.TB) *Session {
	tb.Helper()
	s, err := New(DefaultConfig()).NewSession(nil, false)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// bulk returns s as a RESP bulk string.
func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// effectStrings returns an effect's arguments as strings.
func effectStrings(e *Effect) []string {
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		args[i] = string(a)
	}
	return args
}

// effectRecorder is a server with a session and the effects it reports.
type effectRecorder struct {
	srv     *Server
	s       *Session
	effects [][]string
}

func newEffectRecorder(t testing.TB) *effectRecorder {
	t.Helper()
	r := &effectRecorder{srv: New(DefaultConfig())}
	r.srv.AddHook(func(e *Effect) {
		args := effectStrings(e)
		if string(e.Key) != args[1] {
			t.Errorf("effect %q: Key %q is not args[1]", args, e.Key)
		}
		r.effects = append(r.effects, args)
	})
	s, err := r.srv.NewSession(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	return r
}

// run executes one command and returns its reply and the effects it
// reported.
func (r *effectRecorder) run(args ...string) (string, [][]string) {
	before := len(r.effects)
	reply := run(r.s, args...)
	return reply, r.effects[before:]
}

// effectStep is one command of a table test: its reply (not checked when
// empty) and the effects it reports.
type effectStep struct {
	args    []string
	reply   string
	effects [][]string
}

// runSteps runs the steps on r in order and checks each one's reply and
// effects.
func runSteps(t *testing.T, r *effectRecorder, steps []effectStep) {
	t.Helper()
	for _, tc := range steps {
		reply, effects := r.run(tc.args...)
		if tc.reply != "" && reply != tc.reply {
			t.Errorf("%q: reply %q, want %q", tc.args, reply, tc.reply)
		}
		checkEffects(t, tc.args, effects, tc.effects)
	}
}

// checkEffects compares the effects the command args reported with the
// ones wanted.
func checkEffects(t *testing.T, args []string, got, want [][]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%q: effects %q, want %q", args, got, want)
		return
	}
	for i := range got {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("%q: effect %q, want %q", args, got[i], want[i])
		}
	}
}

// dumpKey describes a key's type, content and expiry in a canonical form:
// sorted members, sorted field=value pairs, the absolute expiry time.
func dumpKey(r *effectRecorder, key string) string {
	typ, _ := r.run("TYPE", key)
	var items []string
	switch typ {
	case "+hash\r\n":
		e := r.s.db.Lookup([]byte(key))
		h := e.Obj.(*keyspace.Hash)
		h.Range(func(f, v []byte) bool {
			items = append(items, string(f)+"="+string(v))
			return true
		})
	case "+set\r\n":
		e := r.s.db.Lookup([]byte(key))
		set := e.Obj.(*keyspace.Set)
		set.Range(func(m []byte) bool {
			items = append(items, string(m))
			return true
		})
	case "+string\r\n":
		v, _ := r.run("GET", key)
		items = append(items, v)
	}
	sort.Strings(items)
	at, _ := r.s.db.Expiry([]byte(key))
	return strings.TrimSpace(typ) + " " + strings.Join(items, ",") + " expires " + strconv.FormatInt(at, 10)
}

// replayCheck runs n commands that next draws from rng on one server,
// applies the effects they report to a second one, and checks after each
// command that dump describes every key alike on both.
func replayCheck(t *testing.T, rng *rand.Rand, n int, keys []string, dump func(*effectRecorder, string) string, next func(r *rand.Rand) []string) {
	t.Helper()
	src := newEffectRecorder(t)
	dst := newEffectRecorder(t)
	for i := 0; i < n; i++ {
		args := next(rng)
		_, effects := src.run(args...)
		for _, eff := range effects {
			if !slices.Contains(keys, eff[1]) {
				t.Fatalf("%q reported an effect on %q", args, eff[1])
			}
			if rep, _ := dst.run(eff...); strings.HasPrefix(rep, "-") {
				t.Fatalf("replaying %q (from %q): %s", eff, args, rep)
			}
		}
		for _, k := range keys {
			if a, b := dump(src, k), dump(dst, k); a != b {
				t.Fatalf("after %q (effects %q), key %s:\n server  %q\n replica %q", args, effects, k, a, b)
			}
		}
	}
}

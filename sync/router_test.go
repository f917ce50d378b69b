package sync

import (
	"errors"
	"fmt"
	"testing"
)

type nopPusher struct{}

func (nopPusher) Push([]byte) {}

// kinds routes key and returns each hit's kind by owner name.
func kinds(r *Router, db int, key string) map[string]Kind {
	out := map[string]Kind{}
	for _, h := range r.Route(db, []byte(key), nil) {
		name := h.Sub.Owner.(string)
		if _, dup := out[name]; dup {
			panic("connection reported twice: " + name)
		}
		out[name] = h.Kind
	}
	return out
}

func TestRouterRoute(t *testing.T) {
	r := NewRouter(2)
	a := r.NewSub(nopPusher{}, "a")
	b := r.NewSub(nopPusher{}, "b")
	c := r.NewSub(nopPusher{}, "c")
	r.SetSync(a, 0, []string{"user:*", "user:1*"}, nil)
	if _, err := r.AddQuery(a, 0, "user:1"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.AddQuery(b, 0, "room:*"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Watch(b, 0, [][]byte{[]byte("user:1"), []byte("user:1")}); err != nil {
		t.Fatal(err)
	}
	// c has a token scope covering room:1 only.
	scope := NewScope([]string{"room:1"})
	r.SetSync(c, 0, scope.Patterns(), scope)
	if _, err := r.AddQuery(c, 0, "room:*"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Watch(c, 1, [][]byte{[]byte("room:1")}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		db   int
		key  string
		want map[string]Kind
	}{
		{0, "user:1", map[string]Kind{"a": Mutation | Keychange, "b": Keychange}},
		{0, "user:2", map[string]Kind{"a": Mutation}},
		{0, "room:1", map[string]Kind{"b": Mutation | Keychange, "c": Mutation | Keychange}},
		{0, "room:2", map[string]Kind{"b": Mutation | Keychange}},
		{0, "other", map[string]Kind{}},
		{1, "room:1", map[string]Kind{"c": Keychange}},
		{1, "user:1", map[string]Kind{}},
	}
	for _, tc := range tests {
		got := kinds(r, tc.db, tc.key)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Route(%d, %q) = %v, want %v", tc.db, tc.key, got, tc.want)
		}
	}
	// A new SYNC replaces the scope; Drop forgets everything.
	r.SetSync(a, 0, []string{"other"}, nil)
	if got := kinds(r, 0, "user:2"); len(got) != 0 {
		t.Errorf("after SYNC replace, user:2 routes to %v", got)
	}
	if got := kinds(r, 0, "other"); got["a"] != Mutation {
		t.Errorf("after SYNC replace, other routes to %v", got)
	}
	if m := r.Members(0, nil); len(m) != 3 {
		t.Errorf("Members(0) = %d connections, want 3", len(m))
	}
	for _, s := range []*Sub{a, b, c} {
		r.Drop(s)
	}
	if r.Active() {
		t.Errorf("router active after dropping everyone: %d registrations", r.active.Load())
	}
	if got := kinds(r, 0, "room:1"); len(got) != 0 {
		t.Errorf("after Drop, room:1 routes to %v", got)
	}
}

func TestRouterLimits(t *testing.T) {
	r := NewRouter(1)
	s := r.NewSub(nopPusher{}, "s")
	for i := 0; i < MaxQueries; i++ {
		if added, err := r.AddQuery(s, 0, fmt.Sprintf("q%d:*", i)); !added || err != nil {
			t.Fatalf("AddQuery %d = %v, %v", i, added, err)
		}
	}
	if added, err := r.AddQuery(s, 0, "q0:*"); added || err != nil {
		t.Fatalf("re-adding a query = %v, %v; want false, nil", added, err)
	}
	if _, err := r.AddQuery(s, 0, "one-too-many"); !errors.Is(err, ErrTooManyQueries) {
		t.Fatalf("query %d: err = %v", MaxQueries+1, err)
	}
	if !r.RemoveQuery(s, 0, "q0:*") || r.RemoveQuery(s, 0, "q0:*") {
		t.Fatal("RemoveQuery results wrong")
	}
	keys := make([][]byte, MaxWatched)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("k%d", i))
	}
	if n, err := r.Watch(s, 0, keys[:10]); n != 10 || err != nil {
		t.Fatalf("Watch 10 = %d, %v", n, err)
	}
	if n, err := r.Watch(s, 0, keys); n != MaxWatched || err != nil {
		t.Fatalf("Watch all = %d, %v", n, err)
	}
	if n, err := r.Watch(s, 0, [][]byte{[]byte("extra"), keys[0]}); n != MaxWatched || !errors.Is(err, ErrTooManyWatched) {
		t.Fatalf("Watch past the limit = %d, %v", n, err)
	}
	if n := r.Unwatch(s, 0, keys[:4]); n != MaxWatched-4 {
		t.Fatalf("Unwatch 4 left %d", n)
	}
	if n := r.Unwatch(s, 0, nil); n != 0 {
		t.Fatalf("Unwatch all left %d", n)
	}
	if _, q, w := r.Counts(s); q != MaxQueries-1 || w != 0 {
		t.Fatalf("Counts = %d queries, %d watched", q, w)
	}
}

// BenchmarkRoute routes writes through a router holding 10 000 SYNC
// patterns (one per connection) plus 100 connections sharing one pattern,
// the fan-out benchmark's shape.
func BenchmarkRoute(b *testing.B) {
	r := NewRouter(1)
	for i := 0; i < 10000; i++ {
		s := r.NewSub(nopPusher{}, i)
		r.SetSync(s, 0, []string{fmt.Sprintf("c:%d:*", i)}, nil)
	}
	for i := 0; i < 100; i++ {
		s := r.NewSub(nopPusher{}, -i)
		r.SetSync(s, 0, []string{"shared:*"}, nil)
	}
	b.Run("own", func(b *testing.B) {
		key := []byte("c:4242:x")
		hits := make([]Hit, 0, 128)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if hits = r.Route(0, key, hits[:0]); len(hits) != 1 {
				b.Fatal(len(hits))
			}
		}
	})
	b.Run("shared", func(b *testing.B) {
		key := []byte("shared:x")
		hits := make([]Hit, 0, 128)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if hits = r.Route(0, key, hits[:0]); len(hits) != 100 {
				b.Fatal(len(hits))
			}
		}
	})
	b.Run("none", func(b *testing.B) {
		key := []byte("nobody:x")
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if len(r.Route(0, key, nil)) != 0 {
				b.Fatal("hit")
			}
		}
	})
}

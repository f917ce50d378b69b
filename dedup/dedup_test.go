package dedup

import (
	"math"
	"testing"
	"time"
)

func TestAdmit(t *testing.T) {
	tab := New(nil)
	steps := []struct {
		client string
		id     uint64
		want   bool
	}{
		{"a", 0, true},  // no mark yet: any id runs, 0 included
		{"a", 0, false}, // replay
		{"a", 5, true},
		{"a", 3, false},
		{"a", 5, false},
		{"a", 6, true},
		{"b", 1, true}, // marks are per client
		{"b", 1, false},
		{"a", math.MaxUint64, true},
		{"a", math.MaxUint64, false},
		{"a", 7, false},
	}
	for i, st := range steps {
		if got := tab.Admit([]byte(st.client), st.id); got != st.want {
			t.Fatalf("step %d Admit(%s, %d) = %v, want %v", i, st.client, st.id, got, st.want)
		}
	}
	if tab.Len() != 2 {
		t.Fatalf("Len = %d", tab.Len())
	}
}

func TestSweepAndRestore(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	tab := New(func() time.Time { return now })
	tab.Admit([]byte("old"), 1)
	now = now.Add(23 * time.Hour)
	tab.Admit([]byte("new"), 9)
	now = now.Add(2 * time.Hour)
	if n := tab.Sweep(); n != 1 {
		t.Fatalf("swept %d, want 1", n)
	}
	ms := tab.Marks()
	if len(ms) != 1 || ms[0].ClientID != "new" || ms[0].High != 9 {
		t.Fatalf("marks %+v", ms)
	}
	other := New(func() time.Time { return now })
	other.Restore(ms)
	if other.Admit([]byte("new"), 9) {
		t.Fatal("restored mark did not hold")
	}
	other.Raise("new", 20, now.UnixMilli())
	if other.Admit([]byte("new"), 15) || !other.Admit([]byte("new"), 21) {
		t.Fatal("Raise did not move the mark")
	}
	other.Raise("new", 3, 0) // never lowers
	if other.Admit([]byte("new"), 21) {
		t.Fatal("Raise lowered the mark")
	}
}

func BenchmarkAdmit(b *testing.B) {
	tab := New(nil)
	id := []byte("5f0c8a3e-0d5c-4a53-8d1e-9b1c2f6e7a10")
	for i := 0; i < b.N; i++ {
		tab.Admit(id, uint64(i))
	}
}

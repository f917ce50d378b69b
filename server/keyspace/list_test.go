package keyspace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// listContents returns the list's elements head to tail as strings.
func listContents(l *List) []string {
	var out []string
	l.Range(func(v []byte) bool {
		out = append(out, string(v))
		return true
	})
	return out
}

// checkList compares l against the model and checks its invariants.
func checkList(t *testing.T, step string, l *List, model []string) {
	t.Helper()
	got := listContents(l)
	if !slices.Equal(got, model) {
		t.Fatalf("%s: list %q, want %q", step, got, model)
	}
	if l.Len() != len(model) {
		t.Fatalf("%s: Len %d, want %d", step, l.Len(), len(model))
	}
	size := 0
	for i, v := range model {
		size += len(v)
		if string(l.At(i)) != v {
			t.Fatalf("%s: At(%d) = %q, want %q", step, i, l.At(i), v)
		}
	}
	if l.Bytes() != size {
		t.Fatalf("%s: Bytes %d, want %d", step, l.Bytes(), size)
	}
}

func TestListOperations(t *testing.T) {
	tests := []struct {
		name string
		run  func(l *List)
		want []string
	}{
		{"push back", func(l *List) { l.PushBack([]byte("a")); l.PushBack([]byte("b")) }, []string{"a", "b"}},
		{"push front", func(l *List) { l.PushFront([]byte("a")); l.PushFront([]byte("b")) }, []string{"b", "a"}},
		{"pop front", func(l *List) {
			l.PushBack([]byte("a"))
			l.PushBack([]byte("b"))
			if v := l.PopFront(); string(v) != "a" {
				panic(v)
			}
		}, []string{"b"}},
		{"pop back", func(l *List) {
			l.PushBack([]byte("a"))
			l.PushBack([]byte("b"))
			if v := l.PopBack(); string(v) != "b" {
				panic(v)
			}
		}, []string{"a"}},
		{"pop empty", func(l *List) {
			if l.PopFront() != nil || l.PopBack() != nil {
				panic("popped from an empty list")
			}
		}, nil},
		{"insert middle", func(l *List) {
			for _, v := range []string{"a", "b", "d", "e"} {
				l.PushBack([]byte(v))
			}
			l.Insert(2, []byte("c"))
		}, []string{"a", "b", "c", "d", "e"}},
		{"insert near head", func(l *List) {
			for _, v := range []string{"a", "c", "d", "e", "f"} {
				l.PushBack([]byte(v))
			}
			l.Insert(1, []byte("b"))
		}, []string{"a", "b", "c", "d", "e", "f"}},
		{"insert ends", func(l *List) {
			l.Insert(0, []byte("b"))
			l.Insert(0, []byte("a"))
			l.Insert(2, []byte("c"))
		}, []string{"a", "b", "c"}},
		{"set", func(l *List) {
			l.PushBack([]byte("a"))
			l.PushBack([]byte("b"))
			l.Set(1, []byte("longer"))
		}, []string{"a", "longer"}},
		{"trim", func(l *List) {
			for i := 0; i < 10; i++ {
				l.PushBack([]byte{byte('0' + i)})
			}
			l.Trim(2, 4)
		}, []string{"2", "3", "4"}},
		{"remove from head", func(l *List) {
			for _, v := range []string{"x", "a", "x", "b", "x"} {
				l.PushBack([]byte(v))
			}
			if n := l.Remove(2, []byte("x")); n != 2 {
				panic(n)
			}
		}, []string{"a", "b", "x"}},
		{"remove from tail", func(l *List) {
			for _, v := range []string{"x", "a", "x", "b", "x"} {
				l.PushBack([]byte(v))
			}
			if n := l.Remove(-2, []byte("x")); n != 2 {
				panic(n)
			}
		}, []string{"x", "a", "b"}},
		{"remove all", func(l *List) {
			for _, v := range []string{"x", "a", "x", "b", "x"} {
				l.PushBack([]byte(v))
			}
			if n := l.Remove(0, []byte("x")); n != 3 {
				panic(n)
			}
		}, []string{"a", "b"}},
		{"remove min count", func(l *List) {
			for _, v := range []string{"x", "x"} {
				l.PushBack([]byte(v))
			}
			if n := l.Remove(-1<<63, []byte("x")); n != 2 {
				panic(n)
			}
		}, nil},
		{"empty element", func(l *List) { l.PushBack(nil) }, []string{""}},
		{"clear", func(l *List) { l.PushBack([]byte("a")); l.Clear() }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := NewList()
			tc.run(l)
			checkList(t, tc.name, l, tc.want)
		})
	}
}

// TestListModel runs random operations on a list and on a slice and
// compares them after each step, wrapping the ring around many times.
func TestListModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	l := NewList()
	var model []string
	for step := 0; step < 20000; step++ {
		v := fmt.Sprint(rng.IntN(50))
		op := rng.IntN(9)
		switch {
		case op == 0 || op == 1:
			l.PushBack([]byte(v))
			model = append(model, v)
		case op == 2 || op == 3:
			l.PushFront([]byte(v))
			model = append([]string{v}, model...)
		case op == 4 && len(model) > 0:
			got := l.PopFront()
			if string(got) != model[0] {
				t.Fatalf("step %d: PopFront %q, want %q", step, got, model[0])
			}
			model = model[1:]
		case op == 5 && len(model) > 0:
			got := l.PopBack()
			if string(got) != model[len(model)-1] {
				t.Fatalf("step %d: PopBack %q, want %q", step, got, model[len(model)-1])
			}
			model = model[:len(model)-1]
		case op == 6:
			i := rng.IntN(len(model) + 1)
			l.Insert(i, []byte(v))
			model = slices.Insert(model, i, v)
		case op == 7 && len(model) > 0:
			count := int64(rng.IntN(5) - 2)
			want := removeModel(&model, count, v)
			if got := l.Remove(count, []byte(v)); got != want {
				t.Fatalf("step %d: Remove(%d, %q) = %d, want %d", step, count, v, got, want)
			}
		case op == 8 && len(model) > 0 && step%50 == 0:
			a := rng.IntN(len(model))
			b := a + rng.IntN(len(model)-a)
			l.Trim(a, b)
			model = model[a : b+1]
		}
		checkList(t, fmt.Sprintf("step %d", step), l, model)
	}
}

// removeModel applies LREM's rules to a slice.
func removeModel(m *[]string, count int64, v string) int64 {
	var n int64
	limit := count
	if limit < 0 {
		limit = -limit
	}
	s := *m
	if count >= 0 {
		var out []string
		for _, e := range s {
			if e == v && (count == 0 || n < limit) {
				n++
				continue
			}
			out = append(out, e)
		}
		*m = out
		return n
	}
	var rev []string
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == v && n < limit {
			n++
			continue
		}
		rev = append(rev, s[i])
	}
	slices.Reverse(rev)
	*m = rev
	return n
}

func TestListCopiesElements(t *testing.T) {
	l := NewList()
	buf := []byte("abc")
	l.PushBack(buf)
	l.PushFront(buf)
	l.Insert(1, buf)
	buf[0] = 'X'
	checkList(t, "after changing the caller's buffer", l, []string{"abc", "abc", "abc"})

	c := l.Copy().(*List)
	l.Set(0, []byte("changed"))
	l.PopBack()
	checkList(t, "copy", c, []string{"abc", "abc", "abc"})
	if c.Type() != TypeList || c.Encoding() != "quicklist" {
		t.Fatalf("type %v encoding %q", c.Type(), c.Encoding())
	}
}

func TestListShrinks(t *testing.T) {
	l := NewList()
	for i := 0; i < 10000; i++ {
		l.PushBack([]byte("x"))
	}
	for i := 0; i < 9990; i++ {
		l.PopFront()
	}
	if len(l.buf) > 64 {
		t.Fatalf("ring of %d slots for %d elements", len(l.buf), l.Len())
	}
	if l.MemoryUsage() <= 0 {
		t.Fatal("no memory usage")
	}
}

func BenchmarkListPushPop(b *testing.B) {
	l := NewList()
	v := []byte("value")
	for i := 0; i < b.N; i++ {
		l.PushBack(v)
		if l.Len() > 100 {
			l.PopFront()
		}
	}
}

func BenchmarkListAt(b *testing.B) {
	l := NewList()
	for i := 0; i < 600; i++ {
		l.PushBack(bytes.Repeat([]byte("x"), 3))
	}
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		for j := 0; j < 100; j++ {
			n += len(l.At(j))
		}
	}
	_ = n
}

package keyspace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
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
	for i := 0; i < len(model); i += 1 + len(model)/16 {
		if string(l.At(i)) != model[i] {
			t.Fatalf("%s: At(%d) = %q, want %q", step, i, l.At(i), model[i])
		}
	}
	if n := len(model); n > 0 && string(l.At(n-1)) != model[n-1] {
		t.Fatalf("%s: At(%d) = %q, want %q", step, n-1, l.At(n-1), model[n-1])
	}
	checkNodes(t, step, l)
	if len(model) == 0 {
		return
	}
	// Iter from a few positions, both ways.
	for _, from := range []int{0, len(model) / 3, len(model) - 1} {
		var fwd, rev []string
		l.Iter(from, false, func(pos int, v []byte) bool {
			if pos != from+len(fwd) {
				t.Fatalf("%s: Iter from %d gave position %d", step, from, pos)
			}
			fwd = append(fwd, string(v))
			return true
		})
		l.Iter(from, true, func(pos int, v []byte) bool {
			if pos != from-len(rev) {
				t.Fatalf("%s: reverse Iter from %d gave position %d", step, from, pos)
			}
			rev = append(rev, string(v))
			return true
		})
		slices.Reverse(rev)
		if !slices.Equal(fwd, model[from:]) || !slices.Equal(rev, model[:from+1]) {
			t.Fatalf("%s: Iter from %d: %q and %q", step, from, fwd, rev)
		}
	}
}

// checkNodes checks the quicklist's invariants: no empty node, the counts
// and sizes add up, every node walks the same forwards and backwards, and
// no node holds more than the fill allows unless one element alone does.
func checkNodes(t *testing.T, step string, l *List) {
	t.Helper()
	n, size := 0, 0
	for k, nd := range l.nodes {
		if nd.n == 0 {
			t.Fatalf("%s: node %d is empty", step, k)
		}
		var fwd []string
		for off := 0; off < len(nd.b); {
			v, next := entryAt(nd.b, off)
			fwd = append(fwd, string(v))
			off = next
		}
		var rev []string
		for end := len(nd.b); end > 0; {
			v, start := entryBefore(nd.b, end)
			rev = append(rev, string(v))
			end = start
		}
		slices.Reverse(rev)
		if len(fwd) != int(nd.n) || !slices.Equal(fwd, rev) {
			t.Fatalf("%s: node %d of count %d walks as %q and %q", step, k, nd.n, fwd, rev)
		}
		if l.fill > 0 && nd.n > l.fill {
			t.Fatalf("%s: node %d holds %d elements, fill %d", step, k, nd.n, l.fill)
		}
		n += int(nd.n)
		size += len(nd.b)
	}
	if n != l.n || size != l.size {
		t.Fatalf("%s: nodes hold %d elements and %d bytes, list says %d and %d", step, n, size, l.n, l.size)
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
			l := NewList(ListMaxListpackSize)
			tc.run(l)
			checkList(t, tc.name, l, tc.want)
		})
	}
}

// TestListModel runs random operations on a list and on a slice and
// compares them after each step, for fills that make one node, nodes of a
// few elements and nodes of a few hundred bytes, with elements whose
// lengths take one and two bytes to pack.
func TestListModel(t *testing.T) {
	for _, fill := range []int{-2, -1, 1, 2, 3, 16} {
		t.Run(fmt.Sprint("fill=", fill), func(t *testing.T) { listModel(t, fill) })
	}
}

func listModel(t *testing.T, fill int) {
	rng := rand.New(rand.NewPCG(1, uint64(fill+10)))
	l := NewList(fill)
	var model []string
	for step := 0; step < 6000; step++ {
		v := fmt.Sprint(rng.IntN(50))
		if rng.IntN(8) == 0 {
			v += strings.Repeat("x", rng.IntN(300))
		}
		op := rng.IntN(10)
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
		case op == 9 && len(model) > 0:
			i := rng.IntN(len(model))
			l.Set(i, []byte(v))
			model[i] = v
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
	l := NewList(ListMaxListpackSize)
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
	l := NewList(ListMaxListpackSize)
	for i := 0; i < 10000; i++ {
		l.PushBack([]byte("x"))
	}
	for i := 0; i < 9990; i++ {
		l.PopFront()
	}
	if len(l.nodes) != 1 || cap(l.nodes[0].b) > 64 {
		t.Fatalf("%d nodes, the first of %d bytes, for %d elements", len(l.nodes), cap(l.nodes[0].b), l.Len())
	}
	if l.MemoryUsage() <= 0 {
		t.Fatal("no memory usage")
	}
}

// TestListHeadRoom checks the room a head node keeps for LPUSH: pushes at
// the head fill it in place, in one array, and a popped element's bytes
// are never written again by the pushes that follow.
func TestListHeadRoom(t *testing.T) {
	l := NewList(ListMaxListpackSize)
	l.PushAll(true, [][]byte{[]byte("first")})
	var model []string
	model = append(model, "first")
	moves := 0
	for i := 0; i < 2000; i++ {
		data := unsafe.SliceData(l.nodes[0].b)
		v := "v" + strconv.Itoa(i)
		l.PushAll(true, [][]byte{[]byte(v)})
		model = append([]string{v}, model...)
		// Compared as addresses: after a move, data less the element is
		// outside any array, which pointer arithmetic must not reach.
		if nd := l.nodes[0]; len(nd.b) > 1024 && uintptr(unsafe.Pointer(unsafe.SliceData(nd.b))) != uintptr(unsafe.Pointer(data))-uintptr(packedSize(len(v))) {
			moves++
		}
	}
	checkList(t, "after LPUSHes", l, model)
	// Half more at each move past 1 KB: a node of 8 KB is moved about 5
	// times from there, not once per push.
	if moves > 15 {
		t.Errorf("the head node moved %d times in 2000 pushes", moves)
	}
	popped := l.PopFront()
	kept := string(popped)
	model = model[1:]
	for i := 0; i < 50; i++ {
		l.PushFront([]byte("overwrite?"))
		model = append([]string{"overwrite?"}, model...)
	}
	if string(popped) != kept {
		t.Fatalf("popped %q became %q", kept, popped)
	}
	checkList(t, "after a pop and pushes", l, model)
}

func BenchmarkListPushPop(b *testing.B) {
	l := NewList(ListMaxListpackSize)
	v := []byte("value")
	for i := 0; i < b.N; i++ {
		l.PushBack(v)
		if l.Len() > 100 {
			l.PopFront()
		}
	}
}

// BenchmarkListPushFront is LPUSH of one short element onto a long list,
// as redis-benchmark's lpush row runs it.
func BenchmarkListPushFront(b *testing.B) {
	l := NewList(ListMaxListpackSize)
	v := [][]byte{[]byte("xxx")}
	for i := 0; i < b.N; i++ {
		l.PushAll(true, v)
	}
}

func BenchmarkListAt(b *testing.B) {
	l := NewList(ListMaxListpackSize)
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

// FuzzList drives a list and a slice model with the operations the input
// spells, one byte each (with an element length and a fill from the
// input), and checks every packed node walks the same both ways and
// agrees with the model: the packed encoder and decoder on arbitrary
// element sizes and node boundaries.
func FuzzList(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7}, int8(-2))
	f.Add([]byte{0, 0, 0, 0, 6, 6, 7, 3, 3, 5, 200, 130, 4}, int8(2))
	f.Add([]byte{1, 1, 1, 129, 0, 255, 2, 2, 8, 9}, int8(1))
	f.Add([]byte{}, int8(0))
	f.Fuzz(func(t *testing.T, ops []byte, fill int8) {
		l := NewList(int(fill))
		var model []string
		for k, op := range ops {
			if k > 300 {
				break
			}
			// The element's length comes from the op's high bits: up to
			// 200 bytes, so that lengths take one or two bytes to pack.
			v := strings.Repeat(string(rune('a'+k%26)), int(op>>4)*13+k%3)
			i := 0
			if len(model) > 0 {
				i = int(op) % len(model)
			}
			switch op % 10 {
			case 0, 1:
				l.PushBack([]byte(v))
				model = append(model, v)
			case 2:
				l.PushFront([]byte(v))
				model = slices.Insert(model, 0, v)
			case 3:
				if got, want := l.PopFront(), first(model); string(got) != want {
					t.Fatalf("op %d: PopFront %q, want %q", k, got, want)
				}
				if len(model) > 0 {
					model = model[1:]
				}
			case 4:
				if len(model) > 0 {
					if got := l.PopBack(); string(got) != model[len(model)-1] {
						t.Fatalf("op %d: PopBack %q", k, got)
					}
					model = model[:len(model)-1]
				}
			case 5:
				l.Insert(i, []byte(v))
				model = slices.Insert(model, i, v)
			case 6:
				if len(model) > 0 {
					l.Set(i, []byte(v))
					model[i] = v
				}
			case 7:
				if len(model) > 0 {
					want := removeModel(&model, int64(op%5)-2, model[i])
					if got := l.Remove(int64(op%5)-2, l.At(i)); got != want {
						t.Fatalf("op %d: Remove %d, want %d", k, got, want)
					}
				}
			case 8:
				if len(model) > 0 {
					stop := i + (len(model)-i)/2
					l.Trim(i/2, stop)
					model = model[i/2 : stop+1]
				}
			case 9:
				l = l.Copy().(*List)
			}
			checkList(t, fmt.Sprint("op ", k), l, model)
		}
	})
}

// first returns the first element of m, "" when it is empty.
func first(m []string) string {
	if len(m) == 0 {
		return ""
	}
	return m[0]
}

// BenchmarkSmallListBytes reports the heap bytes per list of 10 short
// elements pushed one RPUSH at a time, the memory row, without the
// key's entry.
func BenchmarkSmallListBytes(b *testing.B) {
	const n = 10000
	lists := make([]*List, n)
	var before, after runtime.MemStats
	for range b.N {
		clear(lists)
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range lists {
			l := NewList(ListMaxListpackSize)
			for j := range 10 {
				l.PushBack([]byte("item:" + strconv.Itoa(i*10+j)))
			}
			lists[i] = l
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/list")
	runtime.KeepAlive(lists)
}

// TestListPushAll checks that pushing many elements at once, as LPUSH and
// RPUSH do, gives the list one push at a time would, at both ends, across
// node boundaries, and that a list built by one push holds no slack.
func TestListPushAll(t *testing.T) {
	batch := func(prefix string, n, size int) [][]byte {
		vs := make([][]byte, n)
		for i := range vs {
			vs[i] = []byte(prefix + strconv.Itoa(i) + strings.Repeat("x", size))
		}
		return vs
	}
	cases := []struct {
		name  string
		fill  int
		front bool
		vs    [][]byte
	}{
		{"rpush into an empty list", ListMaxListpackSize, false, batch("a", 10, 0)},
		{"lpush into an empty list", ListMaxListpackSize, true, batch("a", 10, 0)},
		{"rpush past a node's count", 4, false, batch("b", 11, 3)},
		{"lpush past a node's count", 4, true, batch("b", 11, 3)},
		{"rpush past a node's bytes", -1, false, batch("c", 40, 300)},
		{"lpush past a node's bytes", -1, true, batch("c", 40, 300)},
		{"one element larger than a node", -1, false, batch("d", 2, 5000)},
	}
	for _, c := range cases {
		for _, start := range [][][]byte{nil, batch("s", 3, 1)} {
			l, one := NewList(c.fill), NewList(c.fill)
			var model []string
			for _, v := range start {
				l.PushBack(v)
				one.PushBack(v)
				model = append(model, string(v))
			}
			l.PushAll(c.front, c.vs)
			for _, v := range c.vs {
				if c.front {
					one.PushFront(v)
					model = append([]string{string(v)}, model...)
				} else {
					one.PushBack(v)
					model = append(model, string(v))
				}
			}
			step := fmt.Sprintf("%s after %d", c.name, len(start))
			checkList(t, step, l, model)
			if len(l.nodes) != len(one.nodes) {
				t.Errorf("%s: %d nodes, one push at a time makes %d", step, len(l.nodes), len(one.nodes))
			}
			// The array is the room before b (LPUSH) and b's capacity.
			if nd := l.nodes[0]; start == nil && len(l.nodes) == 1 && nd.before()+cap(nd.b) != lpCap(len(nd.b)) {
				t.Errorf("%s: capacity %d for %d bytes", step, nd.before()+cap(nd.b), len(nd.b))
			}
		}
	}
}

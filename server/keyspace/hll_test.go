package keyspace

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"testing"
)

// hllOf adds elems to a new HyperLogLog.
func hllOf(t testing.TB, sparseMax int, elems ...string) []byte {
	b := NewHLL()
	for _, e := range elems {
		var r HLLResult
		if b, r = HLLAdd(b, []byte(e), sparseMax); r == HLLCorrupt {
			t.Fatalf("HLLAdd(%q) on a valid HyperLogLog: corrupt", e)
		}
	}
	return b
}

func TestHLLGolden(t *testing.T) {
	// Opcodes and estimates redis-server 7.0.15 gives for the same adds
	// (PFDEBUG DECODE, PFCOUNT).
	tests := []struct {
		elems  []string
		decode string
		count  uint64
	}{
		{nil, "Z:16384", 0},
		{[]string{"a", "b", "c"}, "Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603", 3},
	}
	for _, tc := range tests {
		b := hllOf(t, 3000, tc.elems...)
		if got := HLLDecode(b); got != tc.decode {
			t.Errorf("%q: decode %q, want %q", tc.elems, got, tc.decode)
		}
		if got, ok := HLLCount(b); !ok || got != tc.count {
			t.Errorf("%q: count %d %v, want %d", tc.elems, got, ok, tc.count)
		}
	}
	if got := NewHLL(); !bytes.Equal(got, []byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff")) {
		t.Errorf("NewHLL() = %q", got)
	}
}

// TestHLLSparseMatchesDense adds the same random elements to a sparse and a
// dense HyperLogLog: the sparse one converted must hold the same registers,
// and the estimates must agree, at every size through promotion.
func TestHLLSparseMatchesDense(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 10, 100, 1000, 5000} {
		for _, sparseMax := range []int{0, 300, 3000, 20000} {
			sparse := NewHLL()
			dense, _ := HLLToDense(NewHLL())
			for i := 0; i < n; i++ {
				e := []byte(strconv.FormatUint(r.Uint64(), 16))
				sparse, _ = HLLAdd(sparse, e, sparseMax)
				dense, _ = HLLAdd(dense, e, sparseMax)
				if HLLIsSparse(sparse) && len(sparse) > max(sparseMax, HLLHeaderSize+2) {
					t.Fatalf("n=%d max=%d: sparse string of %d bytes", n, sparseMax, len(sparse))
				}
			}
			conv, ok := HLLToDense(sparse)
			if !ok || !bytes.Equal(conv[HLLHeaderSize:], dense[HLLHeaderSize:]) {
				t.Fatalf("n=%d max=%d: registers differ (ok %v)", n, sparseMax, ok)
			}
			sc, ok1 := HLLCount(sparse)
			dc, ok2 := HLLCount(dense)
			if !ok1 || !ok2 || sc != dc {
				t.Fatalf("n=%d max=%d: counts %d %v, %d %v", n, sparseMax, sc, ok1, dc, ok2)
			}
			var m [HLLRegisters]uint8
			if !HLLMerge(&m, sparse) || HLLCountRegisters(&m) != dc {
				t.Fatalf("n=%d max=%d: merged registers count differently", n, sparseMax)
			}
		}
	}
}

func TestHLLCorruptDetected(t *testing.T) {
	valid := hllOf(t, 3000, "a", "b", "c")
	tail := func(extra string) []byte { return append(append([]byte{}, valid...), extra...) }
	tests := []struct {
		name string
		b    []byte
	}{
		{"tail xzero", tail("hello")},
		{"tail val", tail("\x80")},
		{"tail zero", tail("\x00")},
		{"cut xzero", tail("\x7f")},
		{"no registers", []byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")},
		{"short", []byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xfe")},
		{"val overflow", []byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xfe\x83")},
	}
	for _, tc := range tests {
		if !IsHLL(tc.b) {
			t.Fatalf("%s: header rejected", tc.name)
		}
		if _, ok := HLLCount(tc.b); ok {
			t.Errorf("%s: HLLCount accepted it", tc.name)
		}
		var m [HLLRegisters]uint8
		if HLLMerge(&m, tc.b) {
			t.Errorf("%s: HLLMerge accepted it", tc.name)
		}
		if _, ok := HLLToDense(tc.b); ok {
			t.Errorf("%s: HLLToDense accepted it", tc.name)
		}
	}
	for _, b := range []string{"", "HYLL", "HYLX\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff", "HYLL\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff", "HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"} {
		if IsHLL([]byte(b)) {
			t.Errorf("IsHLL(%q) = true", b)
		}
	}
}

func TestHLLSelfTest(t *testing.T) {
	if err := HLLSelfTest(3000, 42); err != nil {
		t.Fatal(err)
	}
}

// FuzzHLL decodes arbitrary bytes as a HyperLogLog: nothing panics, the
// reading functions agree on whether a value is corrupt, and a value
// found valid stays valid through adds.
func FuzzHLL(f *testing.F) {
	f.Add(NewHLL(), []byte("a"))
	f.Add(hllOf(f, 3000, "a", "b", "c"), []byte("x"))
	f.Add([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xfe\x83"), []byte("y"))
	f.Fuzz(func(t *testing.T, b, ele []byte) {
		// The bytes also make the registers of a dense value, any 6-bit
		// values, which every function must take.
		d := make([]byte, HLLDenseSize)
		copy(d, "HYLL\x00")
		copy(d[HLLHeaderSize:], b)
		var dm [HLLRegisters]uint8
		dc, ok1 := HLLCount(d)
		if !ok1 || !HLLMerge(&dm, d) || HLLCountRegisters(&dm) != dc {
			t.Fatalf("dense registers %q: count %d %v, merged %d", b, dc, ok1, HLLCountRegisters(&dm))
		}
		if d, r := HLLAdd(d, ele, 0); r == HLLCorrupt || len(d) != HLLDenseSize {
			t.Fatalf("dense registers %q: add %v", b, r)
		}
		if !IsHLL(b) {
			return
		}
		orig := append([]byte{}, b...)
		count, okCount := HLLCount(b)
		var m [HLLRegisters]uint8
		okMerge := HLLMerge(&m, b)
		dense, okDense := HLLToDense(b)
		_ = HLLDecode(b)
		_, _ = HLLCached(b)
		if okCount != okMerge || okCount != okDense {
			t.Fatalf("%q: count %v, merge %v, dense %v", b, okCount, okMerge, okDense)
		}
		if !bytes.Equal(b, orig) {
			t.Fatalf("reading changed %q to %q", orig, b)
		}
		if okCount {
			if dc, _ := HLLCount(dense); dc != count || HLLCountRegisters(&m) != count {
				t.Fatalf("%q: estimates %d, dense %d, merged %d", b, count, dc, HLLCountRegisters(&m))
			}
		}
		for i, sparseMax := range []int{0, 3000} {
			c := append([]byte{}, orig...)
			var r HLLResult
			for j := 0; j < 3 && r != HLLCorrupt; j++ {
				c, r = HLLAdd(c, append(ele, byte(i), byte(j)), sparseMax)
			}
			if okCount && (r == HLLCorrupt || !IsHLL(c)) {
				t.Fatalf("%q: a valid value became corrupt: %q", orig, c)
			}
			if okCount {
				if _, ok := HLLCount(c); !ok {
					t.Fatalf("%q: adds made %q", orig, c)
				}
			}
		}
	})
}

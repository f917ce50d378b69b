package keyspace

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestHashConversionThresholds crosses each threshold of the listpack
// encoding in both directions: writes convert a packed hash exactly when
// Redis's hashTypeSet does and never back; Fit, what a load does, packs a
// hash that fits again and converts one that does not.
func TestHashConversionThresholds(t *testing.T) {
	type step struct {
		op    string // set, del or fit
		field string
		value string
		lim   HashLimits // for set and fit
		want  string     // encoding after the step
	}
	def := DefaultHashLimits()
	long := strings.Repeat("v", 65)
	field64 := strings.Repeat("f", 64)
	tests := []struct {
		name  string
		fill  int // fields f0… of value "v" set first, under the defaults
		steps []step
	}{
		{"value at the limit stays", 0, []step{
			{"set", "a", strings.Repeat("v", 64), def, "listpack"},
			{"set", field64, "x", def, "listpack"},
		}},
		{"value over the limit converts", 1, []step{
			{"set", "a", long, def, "hashtable"},
			{"set", "a", "short", def, "hashtable"},
			{"fit", "", "", def, "listpack"},
		}},
		{"field over the limit converts", 1, []step{
			{"set", field64 + "f", "x", def, "hashtable"},
			{"del", field64 + "f", "", def, "hashtable"},
			{"fit", "", "", def, "listpack"},
		}},
		{"update of an existing field over the limit", 3, []step{
			{"set", "f1", long, def, "hashtable"},
		}},
		{"entries at the limit stay", 511, []step{
			{"set", "f511", "v", def, "listpack"},
			{"set", "f0", "updated, no new field", def, "listpack"},
		}},
		{"one entry over the limit converts", 512, []step{
			{"set", "new", "v", def, "hashtable"},
			{"del", "new", "", def, "hashtable"},
			{"del", "f0", "", def, "hashtable"},
			{"fit", "", "", def, "listpack"},
			{"fit", "", "", HashLimits{Entries: 510, Value: 64}, "hashtable"},
		}},
		{"smaller limits from CONFIG SET", 10, []step{
			{"set", "f0", "v", HashLimits{Entries: 5, Value: 64}, "listpack"}, // an update adds nothing
			{"set", "new", "v", HashLimits{Entries: 5, Value: 64}, "hashtable"},
		}},
		{"value limit 0", 0, []step{
			{"set", "", "", HashLimits{Entries: 10, Value: 0}, "listpack"},
			{"set", "a", "", HashLimits{Entries: 10, Value: 0}, "hashtable"},
		}},
		{"entries limit 0", 0, []step{
			{"set", "a", "1", HashLimits{Entries: 0, Value: 64}, "hashtable"},
			{"fit", "", "", HashLimits{Entries: 1, Value: 64}, "listpack"},
		}},
		{"a load keeps a listpack of long values", 2, []step{
			{"set", "long", strings.Repeat("x", 100), HashLimits{Entries: 512, Value: 100}, "listpack"},
			{"fit", "", "", def, "listpack"},
			{"fit", "", "", HashLimits{Entries: 2, Value: 64}, "hashtable"},
		}},
		{"larger limits let a load pack a big hash", 600, []step{
			{"fit", "", "", HashLimits{Entries: 1000, Value: 64}, "listpack"},
			{"set", "big", strings.Repeat("x", 1000), HashLimits{Entries: 1000, Value: 1 << 20}, "listpack"},
			{"fit", "", "", def, "hashtable"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHash()
			ref := map[string]string{}
			for i := 0; i < tc.fill; i++ {
				f := fmt.Sprint("f", i)
				h.Set([]byte(f), []byte("v"))
				ref[f] = "v"
			}
			if tc.fill > 0 && tc.fill <= 512 && h.Encoding() != "listpack" {
				t.Fatalf("%d fields: encoding %s", tc.fill, h.Encoding())
			}
			for i, st := range tc.steps {
				switch st.op {
				case "set":
					h.SetWith([]byte(st.field), []byte(st.value), st.lim)
					ref[st.field] = st.value
				case "del":
					h.Delete([]byte(st.field))
					delete(ref, st.field)
				case "fit":
					h.Fit(st.lim)
				}
				if got := h.Encoding(); got != st.want {
					t.Fatalf("step %d (%s %.10q): encoding %s, want %s", i, st.op, st.field, got, st.want)
				}
				checkHashAgainst(t, h, ref)
				if c := h.Copy().(*Hash); c.Encoding() != st.want {
					t.Fatalf("step %d: the copy's encoding is %s", i, c.Encoding())
				}
			}
		})
	}
}

// TestHashListpackLayout checks the packed bytes themselves, lengths of
// one and more uvarint bytes included, and that updates and removals keep
// the order and give memory back.
func TestHashListpackLayout(t *testing.T) {
	h := NewHash()
	big := strings.Repeat("y", 300) // a two-byte length
	lim := HashLimits{Entries: 100, Value: 1000}
	h.SetWith([]byte("a"), []byte("1"), lim)
	h.SetWith([]byte("b"), []byte(big), lim)
	h.SetWith([]byte("c"), nil, lim)
	want := append([]byte{1, 'a', 1, '1', 1, 'b'}, binary.AppendUvarint(nil, 300)...)
	want = append(append(want, big...), 1, 'c', 0)
	if string(h.pack()) != string(want) {
		t.Fatalf("listpack %q, want %q", h.pack(), want)
	}
	h.SetWith([]byte("b"), []byte("2"), lim) // shrinks the middle
	h.SetWith([]byte("a"), []byte("xyz"), lim)
	if got := string(h.pack()); got != "\x01a\x03xyz\x01b\x012\x01c\x00" {
		t.Fatalf("after the updates: %q", got)
	}
	if cap(h.pack()) > 64 {
		t.Fatalf("capacity %d kept for %d bytes", cap(h.pack()), len(h.pack()))
	}
	h.Delete([]byte("a"))
	h.Delete([]byte("c"))
	if got := string(h.pack()); got != "\x01b\x012" {
		t.Fatalf("after the removals: %q", got)
	}
	h.Delete([]byte("b"))
	if h.p != nil || h.Len() != 0 {
		t.Fatalf("emptied: %q", h.pack())
	}
}

// TestHashSetPairs checks HSET's way of setting: a long field or value
// anywhere among the pairs converts first, and a new hash is allocated
// once, at its final size.
func TestHashSetPairs(t *testing.T) {
	def := DefaultHashLimits()
	long := strings.Repeat("v", 65)
	tests := []struct {
		name    string
		pairs   []string
		created int
		want    string
	}{
		{"short pairs", []string{"a", "1", "b", "2", "a", "3"}, 2, "listpack"},
		{"a long last value", []string{"a", "1", "b", long}, 2, "hashtable"},
		{"a long first field", []string{long, "1", "b", "2"}, 2, "hashtable"},
		{"513 pairs", nil, 513, "hashtable"},
	}
	tests[3].pairs = make([]string, 0, 2*513)
	for i := 0; i < 513; i++ {
		tests[3].pairs = append(tests[3].pairs, fmt.Sprint(i), "v")
	}
	for _, tc := range tests {
		h := NewHash()
		var args [][]byte
		ref := map[string]string{}
		for i := 0; i < len(tc.pairs); i += 2 {
			args = append(args, []byte(tc.pairs[i]), []byte(tc.pairs[i+1]))
			ref[tc.pairs[i]] = tc.pairs[i+1]
		}
		if got := h.SetPairs(args, def); got != tc.created {
			t.Errorf("%s: %d created, want %d", tc.name, got, tc.created)
		}
		if h.Encoding() != tc.want {
			t.Errorf("%s: encoding %s, want %s", tc.name, h.Encoding(), tc.want)
		}
		checkHashAgainst(t, h, ref)
	}
	h := NewHash()
	var args [][]byte
	for i := 0; i < 10; i++ {
		args = append(args, []byte(fmt.Sprint("field:", i)), []byte(fmt.Sprint("v:", 1000+i)))
	}
	if n := testing.AllocsPerRun(10, func() { h = NewHash(); h.SetPairs(args, def) }); n != 2 {
		t.Errorf("a new hash of 10 pairs takes %v allocations, want 2", n)
	}
	if cap(h.pack()) != lpCap(len(h.pack())) {
		t.Errorf("capacity %d for %d bytes", cap(h.pack()), len(h.pack()))
	}
}

// TestHashPackedAllocations checks that a packed hash is two allocations
// whatever its number of fields: the Hash and its listpack.
func TestHashPackedAllocations(t *testing.T) {
	h := NewHash()
	for i := 0; i < 10; i++ {
		h.Set([]byte(fmt.Sprint("field", i)), []byte(fmt.Sprint("value", i)))
	}
	if n := testing.AllocsPerRun(100, func() { h.Copy() }); n != 2 {
		t.Fatalf("a copy of a packed hash of 10 fields takes %v allocations, want 2", n)
	}
}

// FuzzHash runs the operations the input encodes on a Hash and on a map,
// under limits the input picks, and compares every read of the two,
// packed and converted, so that the listpack's reader, search and splice
// meet any mix of lengths.
func FuzzHash(f *testing.F) {
	f.Add([]byte("\x05\x08s\x01a\x01bs\x01a\x00d\x01af\x00"))
	f.Add([]byte("\x02\x40s\x03abc\x02xys\x01q\x05hellos\x01r\x01zd\x03abc"))
	f.Add(append([]byte("\x10\xffs\x01k\xc8"), strings.Repeat("v", 200)...))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 {
			return
		}
		lim := HashLimits{Entries: int(in[0]), Value: int(in[1])}
		in = in[2:]
		// next takes a length byte and that many bytes (at most what is
		// left).
		next := func() []byte {
			if len(in) == 0 {
				return nil
			}
			n := min(int(in[0]), len(in)-1)
			b := in[1 : 1+n]
			in = in[1+n:]
			return b
		}
		h := NewHash()
		ref := map[string]string{}
		for steps := 0; len(in) > 0 && steps < 1000; steps++ {
			op := in[0]
			in = in[1:]
			switch op % 4 {
			case 0, 1:
				field, value := next(), next()
				_, had := ref[string(field)]
				if h.SetWith(field, value, lim) == had {
					t.Fatalf("Set(%q) disagrees on whether the field is new", field)
				}
				ref[string(field)] = string(value)
			case 2:
				field := next()
				_, had := ref[string(field)]
				if h.Delete(field) != had {
					t.Fatalf("Delete(%q) disagrees", field)
				}
				delete(ref, string(field))
			case 3:
				want := fitEncoding(ref, lim, h.Encoding())
				h.Fit(lim)
				if got := h.Encoding(); got != want {
					t.Fatalf("after Fit: encoding %s, want %s", got, want)
				}
			}
			if h.Encoding() == "listpack" && len(ref) > lim.Entries {
				t.Fatalf("packed with %d fields over a limit of %d", len(ref), lim.Entries)
			}
			checkHashAgainst(t, h, ref)
		}
	})
}

// BenchmarkHashPerKey reports the heap bytes and objects that 10 000
// hashes of 10 short fields take per hash, built one HSET field at a time
// as a client would.
func BenchmarkHashPerKey(b *testing.B) {
	const keys = 10000
	fields := make([][]byte, 10)
	for i := range fields {
		fields[i] = []byte(fmt.Sprint("field", i))
	}
	value := []byte("value00001")
	var before, after runtime.MemStats
	for i := 0; i < b.N; i++ {
		hs := make([]*Hash, keys)
		runtime.GC()
		runtime.ReadMemStats(&before)
		for k := range hs {
			h := NewHash()
			for _, f := range fields {
				h.Set(f, value)
			}
			hs[k] = h
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/keys, "bytes/hash")
		b.ReportMetric(float64(after.HeapObjects-before.HeapObjects)/keys, "objects/hash")
		runtime.KeepAlive(hs)
	}
}

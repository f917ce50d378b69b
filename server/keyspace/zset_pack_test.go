package keyspace

import (
	"math"
	"slices"
	"testing"
)

// TestZSetAddNew checks that building a new set whole, as ZADD does, gives
// the set that storing its members one at a time gives, and that it
// declines (changing nothing) whatever Store must do member by member.
func TestZSetAddNew(t *testing.T) {
	lim := ZLimits{Entries: 4, Value: 8}
	cases := []struct {
		name    string
		members []string
		scores  []float64
		ok      bool
	}{
		{"one member", []string{"a"}, []float64{1}, true},
		{"out of order", []string{"c", "a", "b", "d"}, []float64{3, 1, 2, 1.5}, true},
		{"equal scores order by member", []string{"b", "a", "c"}, []float64{1, 1, 0}, true},
		{"negative zero is stored as zero", []string{"b", "a"}, []float64{math.Copysign(0, -1), 0}, true},
		{"large and fractional scores", []string{"x", "y", "z"}, []float64{1e300, -2.5, math.Inf(-1)}, true},
		{"a member twice", []string{"a", "b", "a"}, []float64{1, 2, 3}, false},
		{"too many members", []string{"a", "b", "c", "d", "e"}, []float64{1, 2, 3, 4, 5}, false},
		{"a member too long", []string{"a", "123456789"}, []float64{1, 2}, false},
	}
	for _, c := range cases {
		member := func(j int) []byte { return []byte(c.members[j]) }
		z, want := NewZSet(), NewZSet()
		if got := z.AddNew(len(c.members), member, c.scores, lim); got != c.ok {
			t.Errorf("%s: AddNew %v, want %v", c.name, got, c.ok)
		}
		if !c.ok {
			if z.Len() != 0 || z.Encoding() != "listpack" {
				t.Errorf("%s: declined but changed the set to %d members, %s", c.name, z.Len(), z.Encoding())
			}
			continue
		}
		for j := range c.members {
			want.Store(member(j), c.scores[j], lim)
		}
		if g, w := zsetPairs(z), zsetPairs(want); !slices.Equal(g, w) {
			t.Errorf("%s: %v, one at a time gives %v", c.name, g, w)
		}
		if z.Encoding() != want.Encoding() || z.Len() != want.Len() {
			t.Errorf("%s: %s of %d, one at a time gives %s of %d", c.name, z.Encoding(), z.Len(), want.Encoding(), want.Len())
		}
		if len(z.packed()) != len(want.packed()) || string(z.packed()) != string(want.packed()) {
			t.Errorf("%s: packed %x, one at a time gives %x", c.name, z.packed(), want.packed())
		}
		if z.AddNew(1, member, c.scores, lim) {
			t.Errorf("%s: AddNew into a set that has members", c.name)
		}
	}
}

// zpair is a member and its score's bits, so that -0 and 0 differ.
type zpair struct {
	member string
	bits   uint64
}

// zsetPairs lists a set's members and scores in order.
func zsetPairs(z *ZSet) []zpair {
	var out []zpair
	z.Range(func(m []byte, s float64) bool {
		out = append(out, zpair{string(m), math.Float64bits(s)})
		return true
	})
	return out
}

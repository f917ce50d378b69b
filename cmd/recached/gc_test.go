package main

import "testing"

func TestNextLimit(t *testing.T) {
	const mb = 1 << 20
	floor, ceil := int64(40*mb), int64(44*mb)
	cases := []struct {
		name       string
		limit      int64
		live, goal uint64
		want       int64
	}{
		{"goal at the live heap: raised by the room", floor, 32 * mb, 32 * mb, floor + 2*mb},
		{"some room: raised by what is missing", floor, 32 * mb, 33 * mb, floor + mb},
		{"enough room: kept", floor + mb, 32 * mb, 35 * mb, floor + mb},
		{"too much room: lowered", floor + 3*mb, 32 * mb, 38 * mb, floor + mb},
		{"never below the floor", floor, 16 * mb, 24 * mb, floor},
		{"never above the ceiling", floor, 40 * mb, 30 * mb, ceil},
	}
	for _, c := range cases {
		if got := nextLimit(c.limit, floor, ceil, c.live, c.goal); got != c.want {
			t.Errorf("%s: limit %d, want %d", c.name, got, c.want)
		}
	}
}

func TestWorthReclaiming(t *testing.T) {
	const mb = 1 << 20
	cases := []struct {
		name                string
		live, objects, free uint64
		want                bool
	}{
		{"empty heap", 0, 0, 0, false},
		{"a MiB of garbage is not enough", 2 * mb, 3 * mb, 0, false},
		{"garbage past a sixteenth and a MiB", 16 * mb, 18*mb + 1, 0, true},
		{"free pages count as well", 16 * mb, 16 * mb, 2*mb + 1, true},
		{"garbage and free pages add up", 16 * mb, 17 * mb, mb + 1, true},
		{"little of either on a large heap", 1024 * mb, 1040 * mb, 40 * mb, false},
		{"objects below live after frees", 16 * mb, 15 * mb, 0, false},
	}
	for _, c := range cases {
		if got := worthReclaiming(c.live, c.objects, c.free); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

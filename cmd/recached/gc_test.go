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

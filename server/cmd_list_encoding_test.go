package server_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestListNodesMatchRedis runs the same random list commands on
// redis-server and recached, for list-max-listpack-size values that make
// nodes of one element, of a few elements and of a few kilobytes (with
// elements long enough to need two-byte lengths), and compares every
// reply, OBJECT ENCODING and LRANGE of the whole lists included: the
// packed nodes behave as Redis's quicklist across their boundaries.
func TestListNodesMatchRedis(t *testing.T) {
	p := newPair(t)
	for _, fill := range []int{-2, -1, 1, 3, 16} {
		t.Run("fill="+strconv.Itoa(fill), func(t *testing.T) {
			p.t = t
			p.same([]string{"FLUSHALL"}, []string{"CONFIG", "SET", "list-max-listpack-size", strconv.Itoa(fill)})
			r := rand.New(rand.NewPCG(uint64(fill+100), 7))
			keys := []string{"a{l}", "b{l}"}
			for batch := 0; batch < 40; batch++ {
				var cmds [][]string
				for range 50 {
					cmds = append(cmds, randomListCmd(r, keys))
				}
				for _, k := range keys {
					cmds = append(cmds, []string{"LRANGE", k, "0", "-1"}, []string{"OBJECT", "ENCODING", k})
				}
				p.same(cmds...)
			}
		})
	}
	p.same([]string{"CONFIG", "SET", "list-max-listpack-size", "-2"})
}

// randomListCmd returns a list command on one of keys with random
// arguments: elements short or of up to 300 bytes, indexes in and out of
// range.
func randomListCmd(r *rand.Rand, keys []string) []string {
	k := keys[r.IntN(len(keys))]
	v := func() string {
		s := strconv.Itoa(r.IntN(20))
		if r.IntN(6) == 0 {
			s += strings.Repeat("v", r.IntN(300))
		}
		return s
	}
	idx := func() string { return strconv.Itoa(r.IntN(40) - 20) }
	switch r.IntN(16) {
	case 0, 1:
		return []string{"RPUSH", k, v(), v(), v()}
	case 2, 3:
		return []string{"LPUSH", k, v(), v()}
	case 4:
		return []string{"LPOP", k}
	case 5:
		return []string{"RPOP", k, strconv.Itoa(r.IntN(4))}
	case 6:
		return []string{"LINDEX", k, idx()}
	case 7:
		return []string{"LSET", k, idx(), v()}
	case 8:
		where := "BEFORE"
		if r.IntN(2) == 0 {
			where = "AFTER"
		}
		return []string{"LINSERT", k, where, v(), v()}
	case 9:
		return []string{"LREM", k, strconv.Itoa(r.IntN(5) - 2), v()}
	case 10:
		if r.IntN(4) == 0 {
			return []string{"LTRIM", k, idx(), idx()}
		}
		return []string{"LLEN", k}
	case 11:
		return []string{"LRANGE", k, idx(), idx()}
	case 12:
		return []string{"LPOS", k, v(), "RANK", strconv.Itoa(r.IntN(5) - 2 | 1), "COUNT", strconv.Itoa(r.IntN(3)), "MAXLEN", strconv.Itoa(r.IntN(30))}
	case 13:
		ends := []string{"LEFT", "RIGHT"}
		return []string{"LMOVE", k, keys[r.IntN(len(keys))], ends[r.IntN(2)], ends[r.IntN(2)]}
	case 14:
		return []string{"SORT", k, "BY", "nosort", "LIMIT", strconv.Itoa(r.IntN(10)), strconv.Itoa(r.IntN(10)), "ALPHA", "DESC"}
	default:
		return []string{"LPOS", k, v()}
	}
}

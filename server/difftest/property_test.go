package difftest

import (
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// template is a command generator and how to compare its reply.
type template struct {
	mode string // "", "sort" or "sortpairs", as in the scripts
	gen  func(t *rapid.T) []string
}

// A small world of keys, fields and members, so that random commands meet
// each other's keys, of every type, and run into WRONGTYPE and empty-key
// deletions.
var (
	keys    = rapid.SampledFrom([]string{"a", "b", "c", "d"})
	members = rapid.SampledFrom([]string{"x", "y", "z", "1", "2", "10", "-3", ""})
	ints    = rapid.IntRange(-5, 12)
	scores  = rapid.SampledFrom([]string{"0", "1", "1.5", "-2", "10", "+inf", "-inf", "3e2"})
)

func num(t *rapid.T, label string) string { return strconv.Itoa(ints.Draw(t, label)) }

func cmd(name string, parts ...func(t *rapid.T) string) func(t *rapid.T) []string {
	return func(t *rapid.T) []string {
		out := []string{name}
		for _, p := range parts {
			out = append(out, p(t))
		}
		return out
	}
}

func key(t *rapid.T) string    { return keys.Draw(t, "key") }
func member(t *rapid.T) string { return members.Draw(t, "member") }
func n(t *rapid.T) string      { return num(t, "n") }
func score(t *rapid.T) string  { return scores.Draw(t, "score") }
func where(t *rapid.T) string {
	return rapid.SampledFrom([]string{"BEFORE", "AFTER"}).Draw(t, "where")
}

func lit(s string) func(*rapid.T) string {
	return func(*rapid.T) string { return s }
}

var templates = []template{
	{"", cmd("SET", key, member)},
	{"", cmd("GET", key)},
	{"", cmd("INCR", key)},
	{"", cmd("INCRBY", key, n)},
	{"", cmd("DECR", key)},
	{"", cmd("STRLEN", key)},
	{"", cmd("GETRANGE", key, n, n)},
	{"", cmd("MGET", key, key)},
	{"", cmd("DEL", key)},
	{"", cmd("EXISTS", key, key)},
	{"", cmd("TYPE", key)},
	{"", cmd("GETDEL", key)},
	{"", cmd("SETNX", key, member)},
	{"", cmd("RENAME", key, key)},
	{"", cmd("EXPIRE", key, lit("100"))},
	{"", cmd("TTL", key)},
	{"", cmd("PERSIST", key)},
	{"", cmd("HSET", key, member, member)},
	{"", cmd("HGET", key, member)},
	{"", cmd("HDEL", key, member, member)},
	{"", cmd("HLEN", key)},
	{"", cmd("HINCRBY", key, member, n)},
	{"", cmd("HEXISTS", key, member)},
	{"sortpairs", cmd("HGETALL", key)},
	{"sort", cmd("HKEYS", key)},
	{"", cmd("HSTRLEN", key, member)},
	{"", cmd("LPUSH", key, member, member)},
	{"", cmd("RPUSH", key, member)},
	{"", cmd("LPOP", key)},
	{"", cmd("RPOP", key, func(t *rapid.T) string { return strconv.Itoa(rapid.IntRange(0, 3).Draw(t, "count")) })},
	{"", cmd("LRANGE", key, n, n)},
	{"", cmd("LLEN", key)},
	{"", cmd("LINDEX", key, n)},
	{"", cmd("LREM", key, n, member)},
	{"", cmd("LINSERT", key, where, member, member)},
	{"", cmd("LSET", key, n, member)},
	{"", cmd("LTRIM", key, n, n)},
	{"", cmd("LPOS", key, member)},
	{"", cmd("SADD", key, member, member)},
	{"", cmd("SREM", key, member)},
	{"", cmd("SCARD", key)},
	{"", cmd("SISMEMBER", key, member)},
	{"sort", cmd("SMEMBERS", key)},
	{"sort", cmd("SINTER", key, key)},
	{"sort", cmd("SUNION", key, key)},
	{"sort", cmd("SDIFF", key, key)},
	{"", cmd("SINTERSTORE", key, key, key)},
	{"", cmd("ZADD", key, score, member)},
	{"", cmd("ZINCRBY", key, n, member)},
	{"", cmd("ZRANGE", key, n, n, lit("WITHSCORES"))},
	{"", cmd("ZRANGEBYSCORE", key, score, score)},
	{"", cmd("ZREM", key, member)},
	{"", cmd("ZCARD", key)},
	{"", cmd("ZSCORE", key, member)},
	{"", cmd("ZRANK", key, member)},
	{"", cmd("ZPOPMIN", key)},
	{"", cmd("ZCOUNT", key, score, score)},
}

// stringWrites are the core family's APPEND and SETRANGE. They stay out of
// the mixed family, where they would write XZERO opcodes into HyperLogLogs
// (see hllJunk).
var stringWrites = []template{
	{"", cmd("APPEND", key, member)},
	{"", cmd("SETRANGE", key, func(t *rapid.T) string { return strconv.Itoa(rapid.IntRange(0, 6).Draw(t, "off")) }, member)},
}

// The HyperLogLog world: elements from a range wide enough that a few
// PFADDs fill many registers, and sparse limits that promote to dense after
// a handful of elements.
var (
	hllElems     = rapid.IntRange(0, 400)
	hllSparseMax = rapid.SampledFrom([]string{"0", "20", "60", "200", "3000"})
)

func hllElem(t *rapid.T) string { return "e" + strconv.Itoa(hllElems.Draw(t, "elem")) }

// hllJunk draws bytes that APPEND and SETRANGE write into HyperLogLogs:
// ZERO and VAL opcodes, a bad encoding byte. No XZERO opcode (01xxxxxx): one
// left as the last byte makes Redis read past the end of its string (its
// terminator, or after a split a byte it dropped), which recached does not
// reproduce.
func hllJunk(t *rapid.T) string {
	return rapid.SampledFrom([]string{"1", "10", "-3", "\x80", "\xff", "\x80\x84", "\x02"}).Draw(t, "junk")
}

// pfadd draws PFADD with zero to eight elements.
func pfadd(t *rapid.T) []string {
	out := []string{"PFADD", key(t)}
	for i, m := 0, rapid.IntRange(0, 8).Draw(t, "elems"); i < m; i++ {
		out = append(out, hllElem(t))
	}
	return out
}

var hllTemplates = []template{
	{"", pfadd},
	{"", pfadd},
	{"", cmd("PFCOUNT", key)},
	{"", cmd("PFCOUNT", key, key)},
	{"", cmd("PFMERGE", key, key, key)},
	{"", cmd("PFMERGE", key)},
	{"", cmd("PFDEBUG", lit("ENCODING"), key)},
	{"", cmd("PFDEBUG", lit("TODENSE"), key)},
	{"", cmd("PFDEBUG", lit("DECODE"), key)},
	{"", cmd("CONFIG", lit("SET"), lit("hll-sparse-max-bytes"), func(t *rapid.T) string { return hllSparseMax.Draw(t, "sparsemax") })},
	{"", cmd("GET", key)},
	{"", cmd("GET", key)},
	{"", cmd("SET", key, member)},
	{"", cmd("APPEND", key, hllJunk)},
	{"", cmd("SETRANGE", key, func(t *rapid.T) string { return strconv.Itoa(rapid.IntRange(0, 20).Draw(t, "off")) }, hllJunk)},
	{"", cmd("STRLEN", key)},
	{"", cmd("DEL", key)},
	{"", cmd("TYPE", key)},
	{"", cmd("RENAME", key, key)},
}

// The GEO world: points on an irregular grid, each member nudged by its own
// small offset, so that two members never share a position and equal
// distances from a search centre (whose order Redis leaves to qsort) do not
// occur.
var (
	geoLons  = []float64{13.1, 13.37, 13.82, 14.05, 14.61, 12.74}
	geoLats  = []float64{37.5, 37.73, 38.02, 38.41, 37.18}
	geoUnits = rapid.SampledFrom([]string{"m", "km", "mi", "ft"})
	// radii are a radius and its unit: mostly kilometres across the grid
	// (about 170 by 135 km), a few in the other units.
	radii    = rapid.SampledFrom([][]string{{"1", "km"}, {"15", "km"}, {"40", "km"}, {"100", "km"}, {"300", "km"}, {"25000", "m"}, {"30", "mi"}, {"200000", "ft"}})
	boxSides = rapid.SampledFrom([]string{"10", "30", "70", "150", "500"})
)

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// geoPoint draws a grid point as lon, lat; an eighth are out of range.
func geoPoint(t *rapid.T) (string, string) {
	lon := geoLons[rapid.IntRange(0, len(geoLons)-1).Draw(t, "lon")]
	lat := geoLats[rapid.IntRange(0, len(geoLats)-1).Draw(t, "lat")]
	if rapid.IntRange(0, 7).Draw(t, "badcoord") == 0 {
		lat = 86
	}
	return ftoa(lon), ftoa(lat)
}

// geoMember draws a member and its own position: its grid point plus an
// offset that only it has.
func geoMember(t *rapid.T) (lon, lat, m string) {
	i := rapid.IntRange(0, 7).Draw(t, "geomember")
	plon := geoLons[rapid.IntRange(0, len(geoLons)-1).Draw(t, "lon")]
	plat := geoLats[rapid.IntRange(0, len(geoLats)-1).Draw(t, "lat")]
	if rapid.IntRange(0, 15).Draw(t, "badcoord") == 0 {
		plat = -86
	}
	return ftoa(plon + float64(i)*0.00037), ftoa(plat + float64(i)*0.00051), []string{"x", "y", "z", "1", "2", "10", "-3", ""}[i]
}

func geoadd(t *rapid.T) []string {
	out := []string{"GEOADD", key(t)}
	out = append(out, rapid.SampledFrom([][]string{nil, nil, {"NX"}, {"XX"}, {"CH"}, {"XX", "CH"}, {"NX", "XX"}}).Draw(t, "geoaddopts")...)
	for i, m := 0, rapid.IntRange(1, 3).Draw(t, "points"); i < m; i++ {
		lon, lat, mem := geoMember(t)
		out = append(out, lon, lat, mem)
	}
	return out
}

// geoShape draws FROMMEMBER/FROMLONLAT and BYRADIUS/BYBOX, then the reply
// options. COUNT without ANY sorts by distance (ties excluded by the grid);
// COUNT ANY keeps Redis's search order, as does no ordering at all.
func geoShape(t *rapid.T, withOpts bool) []string {
	var out []string
	if rapid.Bool().Draw(t, "frommember") {
		out = append(out, "FROMMEMBER", member(t))
	} else {
		lon, lat := geoPoint(t)
		out = append(out, "FROMLONLAT", lon, lat)
	}
	if rapid.Bool().Draw(t, "byradius") {
		out = append(append(out, "BYRADIUS"), radii.Draw(t, "radius")...)
	} else {
		out = append(out, "BYBOX", boxSides.Draw(t, "w"), boxSides.Draw(t, "h"), "km")
	}
	return append(out, geoOpts(t, withOpts)...)
}

func geoOpts(t *rapid.T, withOpts bool) []string {
	var out []string
	out = append(out, rapid.SampledFrom([][]string{nil, {"ASC"}, {"DESC"}}).Draw(t, "order")...)
	switch rapid.IntRange(0, 3).Draw(t, "count") {
	case 1:
		out = append(out, "COUNT", strconv.Itoa(rapid.IntRange(1, 4).Draw(t, "countn")))
	case 2:
		out = append(out, "COUNT", strconv.Itoa(rapid.IntRange(1, 4).Draw(t, "countn")), "ANY")
	}
	if withOpts {
		for _, o := range []string{"WITHCOORD", "WITHDIST", "WITHHASH"} {
			if rapid.Bool().Draw(t, o) {
				out = append(out, o)
			}
		}
	}
	return out
}

var geoTemplates = []template{
	{"", geoadd},
	{"", geoadd},
	{"", geoadd},
	{"", cmd("GEOPOS", key, member, member)},
	{"", cmd("GEODIST", key, member, member)},
	{"", cmd("GEODIST", key, member, member, func(t *rapid.T) string { return geoUnits.Draw(t, "unit") })},
	{"", cmd("GEOHASH", key, member, member)},
	{"", func(t *rapid.T) []string { return append([]string{"GEOSEARCH", key(t)}, geoShape(t, true)...) }},
	{"", func(t *rapid.T) []string { return append([]string{"GEOSEARCH", key(t)}, geoShape(t, true)...) }},
	{"", func(t *rapid.T) []string { return append([]string{"GEOSEARCH", key(t)}, geoShape(t, true)...) }},
	{"", func(t *rapid.T) []string {
		out := append([]string{"GEOSEARCHSTORE", key(t), key(t)}, geoShape(t, false)...)
		if rapid.Bool().Draw(t, "storedist") {
			out = append(out, "STOREDIST")
		}
		return out
	}},
	{"", func(t *rapid.T) []string {
		lon, lat := geoPoint(t)
		out := append([]string{"GEORADIUS", key(t), lon, lat}, radii.Draw(t, "radius")...)
		return append(out, geoOpts(t, true)...)
	}},
	{"", func(t *rapid.T) []string {
		out := append([]string{"GEORADIUSBYMEMBER_RO", key(t), member(t)}, radii.Draw(t, "radius")...)
		return append(out, geoOpts(t, true)...)
	}},
	{"", cmd("ZRANGE", key, lit("0"), lit("-1"), lit("WITHSCORES"))},
	{"", cmd("ZRANGE", key, lit("0"), lit("-1"), lit("WITHSCORES"))},
	{"", cmd("ZADD", key, score, member)},
	{"", cmd("ZREM", key, member)},
	{"", cmd("ZCARD", key)},
	{"", cmd("DEL", key)},
	{"", cmd("SET", key, member)},
	{"", cmd("TYPE", key)},
}

// The stream world: ids ms-seq over a few milliseconds, so that explicit
// XADDs both succeed and run into the top item, two groups and two
// consumers. Nothing here depends on the clock: no * ids, no IDLE or TIME,
// no reply that carries idle times.
var (
	skeys     = rapid.SampledFrom([]string{"a", "a", "a", "b", "c"})
	groups    = rapid.SampledFrom([]string{"g1", "g1", "g2"})
	consumers = rapid.SampledFrom([]string{"c1", "c2"})
	smallN    = rapid.IntRange(0, 4)
)

func streamID(t *rapid.T) string {
	ms := strconv.Itoa(rapid.IntRange(0, 6).Draw(t, "ms"))
	if rapid.IntRange(0, 4).Draw(t, "msonly") == 0 {
		return ms
	}
	return ms + "-" + strconv.Itoa(rapid.IntRange(0, 2).Draw(t, "seq"))
}

// skey draws a key for a stream command: mostly a, so that a sequence's
// XADDs, groups and reads meet.
func skey(t *rapid.T) string { return skeys.Draw(t, "key") }

func group(t *rapid.T) string    { return groups.Draw(t, "group") }
func consumer(t *rapid.T) string { return consumers.Draw(t, "consumer") }
func small(t *rapid.T) string    { return strconv.Itoa(smallN.Draw(t, "small")) }

// bound draws an XRANGE bound: the open end, an id or an exclusive id.
func bound(t *rapid.T, open string) string {
	switch b := rapid.SampledFrom([]string{open, open, "id", "(id"}).Draw(t, "bound"); b {
	case "id":
		return streamID(t)
	case "(id":
		return "(" + streamID(t)
	default:
		return b
	}
}

// trim draws MAXLEN or MINID with an optional = or ~, and sometimes LIMIT.
func trim(t *rapid.T) []string {
	var out []string
	if rapid.Bool().Draw(t, "maxlen") {
		out = append(out, "MAXLEN")
	} else {
		out = append(out, "MINID")
	}
	approx := rapid.SampledFrom([]string{"", "=", "~"}).Draw(t, "approx")
	if approx != "" {
		out = append(out, approx)
	}
	if out[0] == "MAXLEN" {
		out = append(out, small(t))
	} else {
		out = append(out, streamID(t))
	}
	if approx == "~" && rapid.IntRange(0, 3).Draw(t, "limit") == 0 {
		out = append(out, "LIMIT", small(t))
	}
	return out
}

func xadd(t *rapid.T) []string {
	out := []string{"XADD", skey(t)}
	if rapid.IntRange(0, 7).Draw(t, "nomkstream") == 0 {
		out = append(out, "NOMKSTREAM")
	}
	if rapid.IntRange(0, 3).Draw(t, "xaddtrim") == 0 {
		out = append(out, trim(t)...)
	}
	id := streamID(t)
	if rapid.IntRange(0, 5).Draw(t, "seqauto") == 0 {
		id = strconv.Itoa(rapid.IntRange(0, 6).Draw(t, "ms")) + "-*"
	}
	out = append(out, id)
	for i, m := 0, rapid.IntRange(1, 3).Draw(t, "fields"); i < m; i++ {
		out = append(out, member(t), member(t))
	}
	return out
}

func optCount(t *rapid.T) []string {
	if rapid.Bool().Draw(t, "hascount") {
		return []string{"COUNT", small(t)}
	}
	return nil
}

func xreadgroup(t *rapid.T) []string {
	out := []string{"XREADGROUP", "GROUP", group(t), consumer(t)}
	out = append(out, optCount(t)...)
	if rapid.IntRange(0, 4).Draw(t, "noack") == 0 {
		out = append(out, "NOACK")
	}
	id := ">"
	if rapid.IntRange(0, 2).Draw(t, "history") == 0 {
		id = rapid.SampledFrom([]string{"0", "0-0", "2-0", "4"}).Draw(t, "historyid")
	}
	return append(out, "STREAMS", skey(t), id)
}

func groupStart(t *rapid.T) string {
	if rapid.IntRange(0, 2).Draw(t, "dollar") == 0 {
		return "$"
	}
	return streamID(t)
}

func xgroupCreate(t *rapid.T) []string {
	out := []string{"XGROUP", "CREATE", skey(t), group(t), groupStart(t)}
	if rapid.IntRange(0, 2).Draw(t, "mkstream") > 0 {
		out = append(out, "MKSTREAM")
	}
	if rapid.IntRange(0, 3).Draw(t, "entriesread") == 0 {
		out = append(out, "ENTRIESREAD", small(t))
	}
	return out
}

var streamTemplates = []template{
	{"", xadd},
	{"", xadd},
	{"", xadd},
	{"", xadd},
	{"", func(t *rapid.T) []string {
		return append([]string{"XRANGE", skey(t), bound(t, "-"), bound(t, "+")}, optCount(t)...)
	}},
	{"", func(t *rapid.T) []string {
		return append([]string{"XREVRANGE", skey(t), bound(t, "+"), bound(t, "-")}, optCount(t)...)
	}},
	{"", cmd("XLEN", skey)},
	{"", cmd("XDEL", skey, streamID, streamID)},
	{"", func(t *rapid.T) []string { return append([]string{"XTRIM", skey(t)}, trim(t)...) }},
	{"", xgroupCreate},
	{"", xgroupCreate},
	{"", func(t *rapid.T) []string {
		out := []string{"XGROUP", "SETID", skey(t), group(t), groupStart(t)}
		if rapid.IntRange(0, 3).Draw(t, "entriesread") == 0 {
			out = append(out, "ENTRIESREAD", small(t))
		}
		return out
	}},
	{"", cmd("XGROUP", lit("DESTROY"), skey, group)},
	{"", cmd("XGROUP", lit("CREATECONSUMER"), skey, group, consumer)},
	{"", cmd("XGROUP", lit("DELCONSUMER"), skey, group, consumer)},
	{"", xreadgroup},
	{"", xreadgroup},
	{"", xreadgroup},
	{"", cmd("XACK", skey, group, streamID, streamID)},
	{"", cmd("XPENDING", skey, group)},
	{"", cmd("XPENDING", skey, group)},
	{"", func(t *rapid.T) []string {
		out := []string{"XCLAIM", skey(t), group(t), consumer(t), "0", streamID(t), streamID(t)}
		if rapid.IntRange(0, 3).Draw(t, "retrycount") == 0 {
			out = append(out, "RETRYCOUNT", small(t))
		}
		if rapid.IntRange(0, 3).Draw(t, "force") == 0 {
			out = append(out, "FORCE")
		}
		if rapid.IntRange(0, 1).Draw(t, "justid") == 0 {
			out = append(out, "JUSTID")
		}
		if rapid.IntRange(0, 3).Draw(t, "lastid") == 0 {
			out = append(out, "LASTID", streamID(t))
		}
		return out
	}},
	{"", func(t *rapid.T) []string {
		out := append([]string{"XAUTOCLAIM", skey(t), group(t), consumer(t), "0", bound(t, "0")}, optCount(t)...)
		if rapid.Bool().Draw(t, "justid") {
			out = append(out, "JUSTID")
		}
		return out
	}},
	{"", cmd("XINFO", lit("GROUPS"), skey)},
	{"", cmd("XINFO", lit("STREAM"), skey)},
	{"", func(t *rapid.T) []string {
		out := []string{"XSETID", skey(t), streamID(t)}
		if rapid.IntRange(0, 2).Draw(t, "entriesadded") == 0 {
			out = append(out, "ENTRIESADDED", small(t), "MAXDELETEDID", streamID(t))
		}
		return out
	}},
	{"", cmd("CONFIG", lit("SET"), lit("stream-node-max-entries"), func(t *rapid.T) string {
		return rapid.SampledFrom([]string{"2", "3", "100"}).Draw(t, "nodemax")
	})},
	{"", cmd("DEL", key)},
	{"", cmd("TYPE", key)},
	{"", cmd("SET", key, member)},
	{"", cmd("RENAME", key, key)},
	{"", cmd("EXISTS", key)},
}

// streamSetup draws the start of a stream sequence: a few entries in a and
// groups on it, so that reads, acknowledgements and claims find a group.
func streamSetup(t *rapid.T) [][]string {
	var out [][]string
	for i, n := 0, rapid.IntRange(0, 6).Draw(t, "entries"); i < n; i++ {
		out = append(out, []string{"XADD", "a", strconv.Itoa(i/2) + "-" + strconv.Itoa(i%2), member(t), member(t)})
	}
	if rapid.IntRange(0, 3).Draw(t, "setupg1") > 0 {
		out = append(out, []string{"XGROUP", "CREATE", "a", "g1", "0", "MKSTREAM"})
	}
	if rapid.Bool().Draw(t, "setupg2") {
		out = append(out, []string{"XGROUP", "CREATE", "a", "g2", "$", "MKSTREAM"})
	}
	return out
}

// family is a pool a sequence draws its commands from, and the commands it
// starts with.
type family struct {
	name  string
	pool  []template
	setup func(t *rapid.T) [][]string
}

// families: each data type with a few commands of other types (so that types
// meet), and everything together.
var families = []family{
	{"core", concat(templates, stringWrites), nil},
	{"hll", hllTemplates, nil},
	{"geo", geoTemplates, nil},
	{"stream", streamTemplates, streamSetup},
	{"all", concat(templates, hllTemplates, geoTemplates, streamTemplates), nil},
}

func concat(ts ...[]template) []template {
	var out []template
	for _, t := range ts {
		out = append(out, t...)
	}
	return out
}

// reset is sent to both servers before every sequence: empty databases and
// the defaults of the parameters the templates set.
var reset = [][]string{
	{"FLUSHALL"},
	{"CONFIG", "SET", "hll-sparse-max-bytes", "3000"},
	{"CONFIG", "SET", "stream-node-max-entries", "100"},
}

// TestPropertyRandomCommands runs random command sequences over a small
// keyspace on redis-server and recached and requires the same replies. A
// sequence draws its commands from one family (strings, hashes, lists, sets
// and sorted sets; HyperLogLog; GEO; streams; or all of them together).
func TestPropertyRandomCommands(t *testing.T) {
	rc := servertest.Dial(t, servertest.StartRedis(t))
	ourAddr, _ := servertest.StartRecached(t, server.DefaultConfig())
	oc := servertest.Dial(t, ourAddr)
	for _, proto := range []string{"2", "3"} {
		for _, c := range []*servertest.Client{rc, oc} {
			if _, err := c.Do("HELLO", proto); err != nil {
				t.Fatal(err)
			}
		}
		t.Run("resp"+proto, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				for _, c := range []*servertest.Client{rc, oc} {
					for _, args := range reset {
						if _, err := c.Do(args...); err != nil {
							rt.Fatal(err)
						}
					}
				}
				fam := families[rapid.IntRange(0, len(families)-1).Draw(rt, "family")]
				var setup [][]string
				if fam.setup != nil {
					setup = fam.setup(rt)
				}
				pick := rapid.IntRange(0, len(fam.pool)-1)
				steps := rapid.IntRange(1, 40).Draw(rt, "steps")
				for i := 0; i < len(setup)+steps; i++ {
					tp := template{}
					var args []string
					if i < len(setup) {
						args = setup[i]
					} else {
						tp = fam.pool[pick.Draw(rt, "command")]
						args = tp.gen(rt)
					}
					want, err := rc.Do(args...)
					if err != nil {
						rt.Fatalf("redis %q: %v", args, err)
					}
					got, err := oc.Do(args...)
					if err != nil {
						rt.Fatalf("recached %q: %v", args, err)
					}
					if normalize(tp.mode, got) != normalize(tp.mode, want) {
						rt.Fatalf("step %d %q\n redis:    %q\n recached: %q", i, args, want, got)
					}
				}
			})
		})
	}
}

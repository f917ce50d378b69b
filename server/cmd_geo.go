package server

import (
	"math"
	"slices"
	"strconv"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

// GEO error texts, in Redis's words.
const (
	errGeoUnit        = "ERR unsupported unit provided. please use M, KM, FT, MI"
	errGeoRadius      = "ERR need numeric radius"
	errGeoNegRadius   = "ERR radius cannot be negative"
	errGeoWidth       = "ERR need numeric width"
	errGeoHeight      = "ERR need numeric height"
	errGeoNegBox      = "ERR height or width cannot be negative"
	errGeoMember      = "ERR could not decode requested zset member"
	errGeoCount       = "ERR COUNT must be > 0"
	errGeoAny         = "ERR the ANY argument requires COUNT argument"
	errGeoStoreRadius = "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
	errGeoStoreSearch = "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
)

func geoCommands() []*Command {
	k1 := keysIn("geo", 1, 1)
	const (
		read  = "read geo slow"
		write = "write geo slow"
	)
	ro, rw := FlagReadonly, FlagWrite|FlagDenyOOM
	storing := func(from int) func(c *Command) *Command {
		return func(c *Command) *Command {
			c.Flags |= FlagMovableKeys
			c.Keys = georadiusKeys(from)
			return k1(c)
		}
	}
	return []*Command{
		k1(&Command{Name: "geoadd", Arity: -5, Flags: rw | FlagSized, KeySpecs: "RW update", Since: "3.2.0", Syntax: "key [NX | XX] [CH] longitude latitude member [longitude latitude member ...]", Summary: "Adds one or more members to a geospatial index. The key is created if it doesn't exist.", Complexity: "O(log(N)) for each item added, where N is the number of elements in the sorted set.", Categories: write, Handler: cmdGeoAdd}),
		k1(&Command{Name: "geodist", Arity: -4, Flags: ro, Since: "3.2.0", Syntax: "key member1 member2 [M | KM | FT | MI]", Summary: "Returns the distance between two members of a geospatial index.", Complexity: "O(log(N))", Categories: read, Handler: cmdGeoDist}),
		k1(&Command{Name: "geohash", Arity: -2, Flags: ro, Since: "3.2.0", Syntax: "key [member [member ...]]", Summary: "Returns members from a geospatial index as geohash strings.", Complexity: "O(log(N)) for each member requested, where N is the number of elements in the sorted set.", Categories: read, Handler: cmdGeoHash}),
		k1(&Command{Name: "geopos", Arity: -2, Flags: ro, Since: "3.2.0", Syntax: "key [member [member ...]]", Summary: "Returns the longitude and latitude of members from a geospatial index.", Complexity: "O(N) where N is the number of members requested.", Categories: read, Handler: cmdGeoPos}),
		k1(&Command{Name: "geosearch", Arity: -7, Flags: ro, Since: "6.2.0", Syntax: "key (FROMMEMBER member | FROMLONLAT longitude latitude) (BYRADIUS radius (M | KM | FT | MI) | BYBOX width height (M | KM | FT | MI)) [ASC | DESC] [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]", Summary: "Queries a geospatial index for members inside an area of a box or a circle.", Complexity: "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape", Categories: read, Handler: geoSearchCmd(1, geoSearch)}),
		{Name: "geosearchstore", Arity: -8, Flags: rw, FirstKey: 1, LastKey: 2, Step: 1, Group: "geo", KeySpecs: "OW update; RO access", Since: "6.2.0", Syntax: "destination source (FROMMEMBER member | FROMLONLAT longitude latitude) (BYRADIUS radius (M | KM | FT | MI) | BYBOX width height (M | KM | FT | MI)) [ASC | DESC] [COUNT count [ANY]] [STOREDIST]", Summary: "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result.", Complexity: "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape", Categories: write, Handler: geoSearchCmd(2, geoSearch|geoSearchStore)},
		storing(6)(&Command{Name: "georadius", Arity: -6, Flags: rw, KeySpecs: "RO access; OW update; OW update", Since: "3.2.0", Syntax: "key longitude latitude radius (M | KM | FT | MI) [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC] [STORE key | STOREDIST key]", Summary: "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result.", Complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.", Categories: write, Handler: geoSearchCmd(1, geoCoords)}),
		k1(&Command{Name: "georadius_ro", Arity: -6, Flags: ro, Since: "3.2.10", Syntax: "key longitude latitude radius (M | KM | FT | MI) [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC]", Summary: "Returns members from a geospatial index that are within a distance from a coordinate.", Complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.", Categories: read, Handler: geoSearchCmd(1, geoCoords|geoNoStore)}),
		storing(5)(&Command{Name: "georadiusbymember", Arity: -5, Flags: rw, KeySpecs: "RO access; OW update; OW update", Since: "3.2.0", Syntax: "key member radius (M | KM | FT | MI) [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC] [STORE key | STOREDIST key]", Summary: "Queries a geospatial index for members within a distance from a member, optionally stores the result.", Complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.", Categories: write, Handler: geoSearchCmd(1, geoMember)}),
		k1(&Command{Name: "georadiusbymember_ro", Arity: -5, Flags: ro, Since: "3.2.10", Syntax: "key member radius (M | KM | FT | MI) [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC]", Summary: "Returns members from a geospatial index that are within a distance from a member.", Complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.", Categories: read, Handler: geoSearchCmd(1, geoMember|geoNoStore)}),
	}
}

// georadiusKeys gives GEORADIUS's keys (GEORADIUSBYMEMBER's: options
// from 5) as Redis's key specs find them: the source, then the key after
// the first STORE and the one after the first STOREDIST from the options
// on.
func georadiusKeys(from int) func(args [][]byte) [][]byte {
	return func(args [][]byte) [][]byte {
		if len(args) < 2 {
			return nil
		}
		keys := [][]byte{args[1]}
		for _, kw := range []string{"store", "storedist"} {
			for i := from; i < len(args)-1; i++ {
				if resp.EqualFold(args[i], kw) {
					keys = append(keys, args[i+1])
					break
				}
			}
		}
		return keys
	}
}

// geoParseLonLat parses a longitude and latitude, replying on error.
func (s *Session) geoParseLonLat(lonArg, latArg []byte) (lon, lat float64, ok bool) {
	lon, ok1 := zparseScore(lonArg)
	lat, ok2 := zparseScore(latArg)
	if !ok1 || !ok2 {
		s.W.Error(errNotFloat)
		return 0, 0, false
	}
	if lon < geoLonMin || lon > geoLonMax || lat < geoLatMin || lat > geoLatMax {
		s.W.Error("ERR invalid longitude,latitude pair " + cFormatF(lon) + "," + cFormatF(lat))
		return 0, 0, false
	}
	return lon, lat, true
}

// cFormatF formats f as C's "%f" does.
func cFormatF(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'f', 6, 64)
}

// geoUnit returns the metres in one unit, replying and returning a
// negative number for an unknown unit.
func (s *Session) geoUnit(u []byte) float64 {
	switch {
	case resp.EqualFold(u, "m"):
		return 1
	case resp.EqualFold(u, "km"):
		return 1000
	case resp.EqualFold(u, "ft"):
		return 0.3048
	case resp.EqualFold(u, "mi"):
		return 1609.34
	}
	s.W.Error(errGeoUnit)
	return -1
}

func cmdGeoAdd(s *Session) {
	args := s.Args
	var nx, xx, ch bool
	i := 2
options:
	for ; i < len(args); i++ {
		switch {
		case resp.EqualFold(args[i], "nx"):
			nx = true
		case resp.EqualFold(args[i], "xx"):
			xx = true
		case resp.EqualFold(args[i], "ch"):
			ch = true
		default:
			break options
		}
	}
	if len(args) == i || (len(args)-i)%3 != 0 || (xx && nx) {
		s.W.Error(errSyntax)
		return
	}
	// GEOADD is ZADD of the encoded positions, as in Redis: the same
	// option checks, reply and ZADD effect.
	n := (len(args) - i) / 3
	var small [4]float64
	scores := small[:0]
	for j := 0; j < n; j++ {
		at := i + 3*j
		lon, lat, ok := s.geoParseLonLat(args[at], args[at+1])
		if !ok {
			return
		}
		scores = append(scores, float64(geoScore(lon, lat)))
	}
	s.zaddScores(zaddFlags{nx: nx, xx: xx, ch: ch}, scores, i+2, 3)
}

func cmdGeoDist(s *Session) {
	toMeter := 1.0
	switch {
	case len(s.Args) == 5:
		if toMeter = s.geoUnit(s.Args[4]); toMeter < 0 {
			return
		}
	case len(s.Args) > 5:
		s.W.Error(errSyntax)
		return
	}
	z, wrong := s.lookupZSet(s.Args[1])
	if wrong {
		return
	}
	if z == nil {
		s.W.Null()
		return
	}
	s1, ok1 := z.Score(s.Args[2])
	s2, ok2 := z.Score(s.Args[3])
	if !ok1 || !ok2 {
		s.W.Null()
		return
	}
	lon1, lat1 := geoDecodeScore(s1)
	lon2, lat2 := geoDecodeScore(s2)
	s.geoWriteDistance(geoDistance(lon1, lat1, lon2, lat2) / toMeter)
}

// geoWriteDistance writes a distance as a bulk string of four decimals.
func (s *Session) geoWriteDistance(d float64) {
	var buf [32]byte
	s.W.Bulk(geoAppendDistance(buf[:0], d))
}

// geoWriteCoords writes a position as a pair of human-formatted doubles:
// bulk strings in RESP2, doubles in RESP3.
func (s *Session) geoWriteCoords(lon, lat float64) {
	s.W.Array(2)
	var buf [64]byte
	for _, f := range [2]float64{lon, lat} {
		b := geoAppendCoord(buf[:0], f)
		if s.W.Proto == 3 {
			s.W.B = append(s.W.B, ',')
			s.W.B = append(s.W.B, b...)
			s.W.B = append(s.W.B, '\r', '\n')
		} else {
			s.W.Bulk(b)
		}
	}
}

func cmdGeoHash(s *Session) {
	s.writeScores(func(score float64, ok bool) {
		if ok {
			s.W.BulkString(geoString(score))
		} else {
			s.W.Null()
		}
	})
}

func cmdGeoPos(s *Session) {
	s.writeScores(func(score float64, ok bool) {
		if ok {
			s.geoWriteCoords(geoDecodeScore(score))
		} else {
			s.W.NullArray()
		}
	})
}

// The variants of the search commands.
const (
	geoCoords      = 1 << iota // GEORADIUS: around coordinates
	geoMember                  // GEORADIUSBYMEMBER: around a member
	geoNoStore                 // the _RO forms: no STORE or STOREDIST
	geoSearch                  // GEOSEARCH's arguments
	geoSearchStore             // GEOSEARCHSTORE: STOREDIST without a key
)

// geoPoint is one search result.
// It is kept small, the member, its score and a distance, as a search
// gathers hundreds of them.
type geoPoint struct {
	member string
	score  float64
	dist   float64
	exact  bool  // dist is the exact distance, not a fast one
	cell   uint8 // the cell it was found in, in the order searched
}

// exactDist makes p's distance the exact one from the shape's centre.
func (p *geoPoint) exactDist(sh *geoShape) {
	if !p.exact {
		p.dist, p.exact = sh.exactDistance(geoDecodeScore(p.score)), true
	}
}

// geoSearchCmd returns the handler of a search command whose source key is
// at argument src.
func geoSearchCmd(src int, flags int) Handler {
	return func(s *Session) { s.geoSearch(src, flags) }
}

// geoSearch runs GEOSEARCH, GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and
// the _RO forms, checking arguments in Redis's order.
func (s *Session) geoSearch(srcIdx int, flags int) {
	args := s.Args
	z, wrong := s.lookupZSet(args[srcIdx])
	if wrong {
		return
	}
	var storeKey []byte
	storeDist := false
	var shape geoShape
	base := 0
	switch {
	case flags&geoCoords != 0:
		base = 6
		var ok bool
		if shape.lon, shape.lat, ok = s.geoParseLonLat(args[2], args[3]); !ok {
			return
		}
		if !s.geoParseRadius(args[4:6], &shape) {
			return
		}
	case flags&geoMember != 0 && z == nil:
		base = 5 // arguments are still parsed, for the reply's form
	case flags&geoMember != 0:
		base = 5
		score, ok := z.Score(args[2])
		if !ok {
			s.W.Error(errGeoMember)
			return
		}
		shape.lon, shape.lat = geoDecodeScore(score)
		if !s.geoParseRadius(args[3:5], &shape) {
			return
		}
	default:
		base = 2
		if flags&geoSearchStore != 0 {
			base = 3
			storeKey = args[1]
		}
	}
	var withDist, withHash, withCoord, fromMember, fromLoc, byRadius, byBox, any bool
	sortDir := 0 // 0 none, 1 ascending, -1 descending
	count := int64(0)
	search := flags&geoSearch != 0
	canStore := flags&(geoNoStore|geoSearch) == 0
	for i := base; i < len(args); i++ {
		a := args[i]
		left := len(args) - i - 1
		switch {
		case resp.EqualFold(a, "withdist"):
			withDist = true
		case resp.EqualFold(a, "withhash"):
			withHash = true
		case resp.EqualFold(a, "withcoord"):
			withCoord = true
		case resp.EqualFold(a, "any"):
			any = true
		case resp.EqualFold(a, "asc"):
			sortDir = 1
		case resp.EqualFold(a, "desc"):
			sortDir = -1
		case resp.EqualFold(a, "count") && left >= 1:
			n, ok := resp.ParseInt(args[i+1])
			if !ok {
				s.W.Error(errNotInt)
				return
			}
			if n <= 0 {
				s.W.Error(errGeoCount)
				return
			}
			count = n
			i++
		case resp.EqualFold(a, "store") && left >= 1 && canStore:
			storeKey, storeDist = args[i+1], false
			i++
		case resp.EqualFold(a, "storedist") && left >= 1 && canStore:
			storeKey, storeDist = args[i+1], true
			i++
		case resp.EqualFold(a, "storedist") && search && flags&geoSearchStore != 0:
			storeDist = true
		case resp.EqualFold(a, "frommember") && left >= 1 && search && !fromLoc:
			if z != nil {
				score, ok := z.Score(args[i+1])
				if !ok {
					s.W.Error(errGeoMember)
					return
				}
				shape.lon, shape.lat = geoDecodeScore(score)
			}
			fromMember = true
			i++
		case resp.EqualFold(a, "fromlonlat") && left >= 2 && search && !fromMember:
			var ok bool
			if shape.lon, shape.lat, ok = s.geoParseLonLat(args[i+1], args[i+2]); !ok {
				return
			}
			fromLoc = true
			i += 2
		case resp.EqualFold(a, "byradius") && left >= 2 && search && !byBox:
			if !s.geoParseRadius(args[i+1:i+3], &shape) {
				return
			}
			byRadius = true
			i += 2
		case resp.EqualFold(a, "bybox") && left >= 3 && search && !byRadius:
			if !s.geoParseBox(args[i+1:i+4], &shape) {
				return
			}
			byBox = true
			i += 3
		default:
			s.W.Error(errSyntax)
			return
		}
	}
	if storeKey != nil && (withDist || withHash || withCoord) {
		if flags&geoSearchStore != 0 {
			s.W.Error(errGeoStoreSearch)
		} else {
			s.W.Error(errGeoStoreRadius)
		}
		return
	}
	if search && !fromMember && !fromLoc {
		s.W.Error("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + string(args[0]))
		return
	}
	if search && !byRadius && !byBox {
		s.W.Error("ERR exactly one of BYRADIUS and BYBOX can be specified for " + string(args[0]))
		return
	}
	if any && count == 0 {
		s.W.Error(errGeoAny)
		return
	}
	if z == nil {
		if storeKey != nil {
			s.zstoreEmpty(storeKey)
		} else {
			s.W.Array(0)
		}
		return
	}
	if count != 0 && sortDir == 0 && !any {
		sortDir = 1
	}
	limit := 0
	if any {
		limit = int(count)
	}
	shape.prepare()
	sc := &s.geo
	defer sc.release()
	points := geoMembersInShape(z, &shape, limit, sc)
	if len(points) == 0 && storeKey == nil {
		s.W.Array(0)
		return
	}
	points = sc.sortPoints(points, &shape, sortDir, int(min(count, math.MaxInt32)))
	if withDist || storeDist {
		for i := range points {
			points[i].exactDist(&shape)
			points[i].dist /= shape.conversion
		}
	}
	if storeKey != nil {
		pairs := make([]zpair, len(points))
		for i, p := range points {
			pairs[i] = zpair{member: p.member, score: p.score}
			if storeDist {
				pairs[i].score = p.dist
			}
		}
		event := "georadiusstore"
		if search {
			event = "geosearchstore"
		}
		s.zstoreResult(storeKey, pairs, false, event)
		return
	}
	options := 0
	for _, on := range [3]bool{withDist, withHash, withCoord} {
		if on {
			options++
		}
	}
	s.W.Array(len(points))
	for _, p := range points {
		if options > 0 {
			s.W.Array(options + 1)
		}
		s.W.BulkString(p.member)
		if withDist {
			s.geoWriteDistance(p.dist)
		}
		if withHash {
			s.W.Int(int64(p.score))
		}
		if withCoord {
			s.geoWriteCoords(geoDecodeScore(p.score))
		}
	}
}

// sortPoints sorts the points by exact distance, ascending for dir 1 and
// descending for -1 (ties in the order found), and keeps the first count
// if count > 0. Only the distances that decide the order or the selection
// are made exact. With a count, the points that can be among the first
// count are those whose fast distance is within three error bounds of the
// count-th smallest (largest) fast distance, found with a heap; the rest
// are left out. The candidates are sorted by fast distance; where
// neighbours' error intervals overlap, the run of them is sorted again by
// exact distance. Runs that do not overlap are ordered by the fast
// distances already, since the error bound grows with the distance.
func (sc *geoScratch) sortPoints(points []geoPoint, sh *geoShape, dir int, count int) []geoPoint {
	if dir == 0 {
		if count > 0 && len(points) > count {
			points = points[:count]
		}
		return points
	}
	order := sc.order[:0]
	if count > 0 && len(points) > count {
		t := sc.kth(points, count, dir)
		for i, p := range points {
			if dir > 0 && p.dist <= t*(1+3*geoFastRel)+3*geoFastAbs || dir < 0 && p.dist >= t*(1-3*geoFastRel)-3*geoFastAbs {
				order = append(order, int32(i))
			}
		}
	} else {
		for i := range points {
			order = append(order, int32(i))
		}
	}
	sc.order = order
	// The position found breaks ties, as a stable sort would.
	byDist := func(i, j int32) int {
		c := cmpFloat(points[i].dist, points[j].dist)
		if dir < 0 {
			c = -c
		}
		if c == 0 {
			c = cmpInt32(i, j)
		}
		return c
	}
	slices.SortFunc(order, byDist)
	for j := 0; j < len(order); {
		k := j + 1
		for k < len(order) && points[order[k-1]].overlaps(&points[order[k]]) {
			k++
		}
		if k-j > 1 {
			for _, i := range order[j:k] {
				points[i].exactDist(sh)
			}
			slices.SortFunc(order[j:k], byDist)
		}
		j = k
	}
	if count > 0 && len(order) > count {
		order = order[:count]
	}
	sorted := slices.Grow(sc.spare[:0], len(order))
	for _, i := range order {
		sorted = append(sorted, points[i])
	}
	sc.setSpare(sorted)
	return sorted
}

// overlaps reports whether the exact distances of p and q could be in
// either order or equal, given the fast distances' error bound. The bound
// is taken for exact distances too, so that both ends of a distance's
// interval grow with the distance.
func (p *geoPoint) overlaps(q *geoPoint) bool {
	return math.Abs(p.dist-q.dist) <= (p.dist+q.dist)*geoFastRel+2*geoFastAbs
}

// kth returns the count-th smallest distance of the points for dir 1, the
// count-th largest for -1, with count <= len(points): the top of a heap
// of the count best.
func (sc *geoScratch) kth(points []geoPoint, count int, dir int) float64 {
	h := sc.heap[:0]
	sign := float64(dir)
	for _, p := range points {
		v := sign * p.dist
		switch {
		case len(h) < count:
			h = append(h, v)
			for c := len(h) - 1; c > 0; {
				up := (c - 1) / 2
				if h[up] >= h[c] {
					break
				}
				h[up], h[c] = h[c], h[up]
				c = up
			}
		case v < h[0]:
			h[0] = v
			for c := 0; ; {
				big := c
				if l := 2*c + 1; l < len(h) && h[l] > h[big] {
					big = l
				}
				if r := 2*c + 2; r < len(h) && h[r] > h[big] {
					big = r
				}
				if big == c {
					break
				}
				h[c], h[big] = h[big], h[c]
				c = big
			}
		}
	}
	sc.heap = h
	return sign * h[0]
}

func cmpInt32(a, b int32) int {
	switch {
	case a > b:
		return 1
	case a < b:
		return -1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a > b:
		return 1
	case a < b:
		return -1
	}
	return 0
}

// geoParseRadius parses "radius unit" into the shape, replying on error.
func (s *Session) geoParseRadius(args [][]byte, shape *geoShape) bool {
	r, ok := zparseScore(args[0])
	if !ok {
		s.W.Error(errGeoRadius)
		return false
	}
	if r < 0 {
		s.W.Error(errGeoNegRadius)
		return false
	}
	conv := s.geoUnit(args[1])
	if conv < 0 {
		return false
	}
	shape.box, shape.radius, shape.conversion = false, r, conv
	return true
}

// geoParseBox parses "width height unit" into the shape, replying on
// error.
func (s *Session) geoParseBox(args [][]byte, shape *geoShape) bool {
	w, ok := zparseScore(args[0])
	if !ok {
		s.W.Error(errGeoWidth)
		return false
	}
	h, ok := zparseScore(args[1])
	if !ok {
		s.W.Error(errGeoHeight)
		return false
	}
	if h < 0 || w < 0 {
		s.W.Error(errGeoNegBox)
		return false
	}
	conv := s.geoUnit(args[2])
	if conv < 0 {
		return false
	}
	shape.box, shape.width, shape.height, shape.conversion = true, w, h, conv
	return true
}

// geoMembersInShape appends to points the members of z inside the shape,
// cell by cell in Redis's order (the centre cell, then its neighbours,
// skipping a neighbour equal to the cell searched before it), members of a
// cell in score order; with limit > 0 it stops once it has limit members.
// It is the members Redis finds, but it walks only the part of each cell
// inside the rectangle that bounds the shape (searchRect), jumping over the
// runs of members outside it, which make most of a cell.
//
// Walking a cell's members is chasing the links of nodes spread over the
// heap, one cache miss per member. The cells' walks are independent, so
// without a limit they go in step, a few members of every cell at a time,
// for the processor to wait for all their misses at once; the members
// found are then put back in cell order.
func geoMembersInShape(z *keyspace.ZSet, shape *geoShape, limit int, sc *geoScratch) []geoPoint {
	cells := shape.cells()
	bound := shape.searchRect()
	var walks [9]geoWalk
	nw := 0
	last := 0
	for i, c := range cells {
		if c.zero() || last != 0 && c == cells[last] {
			continue
		}
		last = i
		rect := geoCellRect(c).intersect(bound)
		if rect.empty() {
			continue
		}
		// The cell's end as Redis computes it, for the same members in
		// the cells that overflow 52 bits, where scores are rounded.
		r := keyspace.ScoreRange{Min: float64(rect.first()), Max: float64(geoBits{c.bits + 1, c.step}.align52()), MaxEx: true}
		if n := z.FirstInScore(&r); n.Valid() {
			walks[nw] = geoWalk{next: n, end: r.Max, rect: rect, cell: uint8(nw)}
			nw++
		}
	}
	points := sc.points[:0]
	if limit > 0 {
		for k := 0; k < nw && len(points) < limit; k++ {
			points = geoWalkCells(walks[k:k+1], shape, points, limit)
		}
		sc.setPoints(points)
		return points
	}
	points = geoWalkCells(walks[:nw], shape, points, 0)
	sc.setPoints(points)
	if nw > 1 {
		// Back in cell order, a counting sort.
		var at [10]int
		for _, p := range points {
			at[p.cell+1]++
		}
		for k := 1; k <= nw; k++ {
			at[k] += at[k-1]
		}
		sorted := slices.Grow(sc.spare[:0], len(points))[:len(points)]
		for _, p := range points {
			sorted[at[p.cell]] = p
			at[p.cell]++
		}
		sc.setSpare(points)
		sc.setPoints(sorted)
		points = sorted
	}
	return points
}

// geoScratch holds the buffers a session's searches reuse, so that a
// search allocates nothing once they have grown: the points found, a
// second array to reorder them into, the order of a sort and the heap of
// a selection.
type geoScratch struct {
	points, spare []geoPoint
	used          int // the most elements of either array set since release
	order         []int32
	heap          []float64
}

func (sc *geoScratch) setPoints(p []geoPoint) {
	sc.points = p
	sc.used = max(sc.used, len(p))
}

func (sc *geoScratch) setSpare(p []geoPoint) {
	sc.spare = p
	sc.used = max(sc.used, len(p))
}

// release clears the points, which hold members that must not outlive
// their set, and drops buffers grown beyond what a usual search needs.
func (sc *geoScratch) release() {
	for _, p := range []*[]geoPoint{&sc.points, &sc.spare} {
		b := *p
		clear(b[:min(sc.used, cap(b))])
		if cap(b) > 1<<12 {
			b = nil
		}
		*p = b[:0]
	}
	sc.used = 0
	if cap(sc.order) > 1<<12 {
		sc.order, sc.heap = nil, nil
	}
}

// geoWalk is the walk of one cell's members inside a rectangle: the next
// node to look at, the end score (exclusive), and the score it is jumping
// to while above the node's.
type geoWalk struct {
	next keyspace.ZPos
	end  float64
	seek float64
	rect geoRect
	cell uint8
}

// geoWalkCells appends the members of the walks' cells that are inside the
// shape, a batch of members of every cell at a time, stopping once points
// holds limit members if limit > 0.
func geoWalkCells(walks []geoWalk, shape *geoShape, points []geoPoint, limit int) []geoPoint {
	const batch = 16
	var nodes [9][batch]keyspace.ZPos
	var scores [9][batch]float64
	var got [9]int
	for active := len(walks); active > 0; {
		// Only loads and bit arithmetic here, so that the misses of the
		// walks overlap.
		for k := range walks {
			got[k] = 0
		}
		for range batch {
			for k := range walks {
				w := &walks[k]
				n := w.next
				if !n.Valid() {
					continue
				}
				score := n.Score()
				switch {
				case score >= w.end:
					w.next = keyspace.ZPos{}
				case score < w.seek:
					w.next = n.Toward(w.seek)
				case !w.rect.contains(geoScoreBits(score)):
					if t, ok := w.rect.next(geoScoreBits(score)); ok {
						w.seek = float64(t)
						w.next = n.Toward(w.seek)
					} else {
						w.next = keyspace.ZPos{}
					}
				default:
					nodes[k][got[k]] = n
					scores[k][got[k]] = score
					got[k]++
					w.next = n.Next()
				}
				if !w.next.Valid() {
					active--
				}
			}
		}
		for k := range walks {
			for j, n := range nodes[k][:got[k]] {
				score := scores[k][j]
				lon, lat := geoDecodeScore(score)
				if d, exact, ok := shape.within(lon, lat); ok {
					points = append(points, geoPoint{member: n.Member(), score: score, dist: d, exact: exact, cell: walks[k].cell})
					if limit > 0 && len(points) >= limit {
						return points
					}
				}
			}
		}
	}
	return points
}

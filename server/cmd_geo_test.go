package server

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/recached/recached/server/keyspace"
)

// TestGeoHashValues checks the geohash arithmetic against values Redis
// 7.0 gives (its documentation's Sicily example and glibc's libm).
func TestGeoHashValues(t *testing.T) {
	cases := []struct {
		lon, lat float64
		score    uint64
		hash     string
	}{
		{13.361389, 38.115556, 3479099956230698, "sqc8b49rny0"},
		{15.087269, 37.502669, 3479447370796909, "sqdtr74hyu0"},
		{-180, -85.05112878, 0, "00"},
		// The north-east corner overflows the cell grid as in Redis.
		{180, 85.05112878, 13510798882111488, "bp05b5048p0"},
	}
	for _, c := range cases {
		score := geoScore(c.lon, c.lat)
		if score != c.score {
			t.Errorf("geoScore(%v, %v) = %d, want %d", c.lon, c.lat, score, c.score)
		}
		if h := geoString(float64(score)); !strings.HasPrefix(h, c.hash) || len(h) != 11 {
			t.Errorf("geoString(%d) = %q, want %q…", score, h, c.hash)
		}
	}
	lon1, lat1 := geoDecodeScore(3479099956230698)
	lon2, lat2 := geoDecodeScore(3479447370796909)
	var b []byte
	if got := string(geoAppendCoord(b, lon1)); got != "13.36138933897018433" {
		t.Errorf("Palermo longitude %q", got)
	}
	if got := string(geoAppendDistance(b, geoDistance(lon1, lat1, lon2, lat2))); got != "166274.1516" {
		t.Errorf("Palermo-Catania %q", got)
	}
}

// TestGeoTrig checks the correctly rounded trigonometry against glibc's
// results where Go's math package differs in the last bit.
func TestGeoTrig(t *testing.T) {
	cases := []struct {
		name string
		f    func(float64) float64
		x    float64
		want uint64
	}{
		// STOREDIST of Palermo from (15, 37) in km: Redis stores
		// 190.44242984775784, Go's math gives 190.44242984775781.
		{"distance", func(float64) float64 {
			lon, lat := geoDecodeScore(3479099956230698)
			return geoDistance(15, 37, lon, lat) / 1000
		}, 0, math.Float64bits(190.44242984775784)},
		{"sin 0.5", geoSin, 0.5, math.Float64bits(0.479425538604203)},
		{"cos 1", geoCos, 1, math.Float64bits(0.5403023058681398)},
		{"cos -3", geoCos, -3, math.Float64bits(-0.9899924966004454)},
		{"asin 0.9", geoAsin, 0.9, math.Float64bits(1.1197695149986342)},
		{"asin 0.3", geoAsin, 0.3, math.Float64bits(0.3046926540153975)},
	}
	for _, c := range cases {
		if got := c.f(c.x); math.Float64bits(got) != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, math.Float64frombits(c.want))
		}
	}
}

// TestGeoEffects checks that GEOADD reports the ZADD of its scores and
// that the store forms re-create their destination, so that replaying
// the effects builds the same sets.
func TestGeoEffects(t *testing.T) {
	r := newEffectRecorder(t)
	runSteps(t, r, []effectStep{
		{[]string{"GEOADD", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"}, ":2\r\n",
			[][]string{{"ZADD", "g", "3479099956230698", "Palermo", "3479447370796909", "Catania"}}},
		{[]string{"GEOADD", "g", "NX", "1", "1", "Palermo"}, ":0\r\n", nil},
		{[]string{"GEOADD", "g", "1", "100", "x"}, "-ERR invalid longitude,latitude pair 1.000000,100.000000\r\n", nil},
		{[]string{"GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC"}, ":2\r\n",
			[][]string{{"DEL", "d"}, {"ZADD", "d", "3479447370796909", "Catania", "3479099956230698", "Palermo"}}},
		{[]string{"GEORADIUS", "g", "15", "37", "100", "km", "STOREDIST", "d"}, ":1\r\n",
			[][]string{{"DEL", "d"}, {"ZADD", "d", "56.4412578701582", "Catania"}}},
		{[]string{"GEORADIUS", "g", "0", "0", "1", "km", "STORE", "d"}, ":0\r\n", [][]string{{"DEL", "d"}}},
		{[]string{"GEORADIUS", "g", "0", "0", "1", "km", "STORE", "d"}, ":0\r\n", nil},
	})
}

// TestGeoFastFilter checks that the search's fast distances, with their
// error bound, select and order exactly the points the exact distances
// do: points on and around the circle's edge, repeated positions (exact
// ties, which keep the order found), ascending and descending, with and
// without COUNT, for circles and boxes.
func TestGeoFastFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 15))
	for round := 0; round < 200; round++ {
		sh := geoShape{lon: rng.Float64(), lat: rng.Float64(), conversion: 1, radius: 1 + rng.Float64()*5000}
		if round%4 == 2 {
			sh.box, sh.width, sh.height = true, 2*sh.radius, sh.radius
		}
		sh.prepare()
		z := keyspace.NewZSet()
		for i := 0; i < 300; i++ {
			// A distance near the radius in a random direction, snapped
			// to the 52-bit grid as stored positions are.
			d := sh.radius * (1 + (rng.Float64()-0.5)*1e-6)
			if i%3 == 0 {
				d = sh.radius * rng.Float64() * 1.5
			}
			angle := rng.Float64() * 2 * math.Pi
			lon := sh.lon + d*math.Cos(angle)/geoEarthRadius/geoDegToRad/math.Cos(sh.lat*geoDegToRad)
			lat := sh.lat + d*math.Sin(angle)/geoEarthRadius/geoDegToRad
			score := float64(geoScore(lon, lat))
			for rep := 0; rep < 1+i%2; rep++ {
				z.AddString(strconv.Itoa(i)+"/"+strconv.Itoa(rep), score, keyspace.DefaultZLimits())
			}
		}
		// In score order, as a search finds them.
		var cands []geoPoint
		for n := z.First(); n.Valid(); n = n.Next() {
			cands = append(cands, geoPoint{member: n.Member(), score: n.Score()})
		}
		if round%2 == 0 {
			// A radius that is some point's exact distance: the fast
			// distance cannot decide that point.
			k := 1 + 3*rng.IntN(len(cands)/5)
			klon, klat := geoDecodeScore(cands[k].score)
			limit := geoDistance(sh.lon, sh.lat, klon, klat)
			if sh.box {
				sh.width = 2 * geoDistance(klon, klat, sh.lon, klat)
			} else {
				sh.radius = limit
			}
		}
		var got, want []geoPoint
		for _, c := range cands {
			lon, lat := geoDecodeScore(c.score)
			d, exact, ok := sh.within(lon, lat)
			if ok {
				c.dist, c.exact = d, exact
				got = append(got, c)
			}
			var in bool
			if sh.box {
				_, _, in = sh.withinExact(lon, lat)
			} else {
				in = geoDistance(sh.lon, sh.lat, lon, lat) <= sh.radius
			}
			if in {
				c.dist, c.exact = geoDistance(sh.lon, sh.lat, lon, lat), true
				want = append(want, c)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d points inside, want %d", round, len(got), len(want))
		}
		for _, dir := range []int{1, -1, 0} {
			for _, count := range []int64{0, 1, 10, 50} {
				g := (&geoScratch{}).sortPoints(slices.Clone(got), &sh, dir, int(count))
				w := slices.Clone(want)
				switch dir {
				case 1:
					slices.SortStableFunc(w, func(a, b geoPoint) int { return cmpFloat(a.dist, b.dist) })
				case -1:
					slices.SortStableFunc(w, func(a, b geoPoint) int { return cmpFloat(b.dist, a.dist) })
				}
				if count > 0 && int64(len(w)) > count {
					w = w[:count]
				}
				if len(g) != len(w) {
					t.Fatalf("round %d dir %d count %d: %d results, want %d", round, dir, count, len(g), len(w))
				}
				for i := range g {
					g[i].exactDist(&sh)
					if g[i].member != w[i].member || g[i].dist != w[i].dist {
						t.Fatalf("round %d dir %d count %d: result %d is %s at %v, want %s at %v",
							round, dir, count, i, g[i].member, g[i].dist, w[i].member, w[i].dist)
					}
				}
			}
		}
	}
}

// withinExact is Redis's box test on exact distances.
func (sh *geoShape) withinExact(lon, lat float64) (float64, bool, bool) {
	if geoLatDistance(lat, sh.lat) > sh.height*sh.conversion/2 {
		return 0, true, false
	}
	if geoDistance(lon, lat, sh.lon, lat) > sh.width*sh.conversion/2 {
		return 0, true, false
	}
	return geoDistance(sh.lon, sh.lat, lon, lat), true, true
}

// BenchmarkGeoSearch measures a 1 km search with COUNT 10 among a million
// members spread over a one-degree square, as the benchmark's GEOSEARCH.
func BenchmarkGeoSearch(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	z := keyspace.NewZSet()
	for i := 0; i < 1000000; i++ {
		z.AddString("m:"+strconv.Itoa(i), float64(geoScore(rng.Float64(), rng.Float64())), keyspace.DefaultZLimits())
	}
	var sc geoScratch
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sh := geoShape{lon: rng.Float64(), lat: rng.Float64(), conversion: 1000, radius: 1}
		sh.prepare()
		points := geoMembersInShape(z, &sh, 0, &sc)
		points = sc.sortPoints(points, &sh, 1, 10)
		for j := range points {
			points[j].exactDist(&sh)
		}
		sc.release()
	}
}

// TestGeoRectNext checks the Z-order jump against every position of small
// rectangles, and of random ones in the full 52 bits.
func TestGeoRectNext(t *testing.T) {
	check := func(r geoRect, z uint64, span uint64) {
		t.Helper()
		if r.contains(z) {
			return
		}
		want, wantOK := uint64(0), false
		for y := z + 1; y <= r.last() && y <= z+span; y++ {
			if r.contains(y) {
				want, wantOK = y, true
				break
			}
		}
		got, ok := r.next(z)
		if !wantOK && z+span < r.last() {
			// Beyond the brute force's reach: the answer must be a
			// position of the rectangle past it.
			if !ok || got <= z+span || !r.contains(got) {
				t.Fatalf("rect %+v next(%d) = %d %v", r, z, got, ok)
			}
			return
		}
		if ok != wantOK || got != want {
			t.Fatalf("rect %+v next(%d) = %d %v, want %d %v", r, z, got, ok, want, wantOK)
		}
	}
	for latLo := uint32(0); latLo < 8; latLo++ {
		for latHi := latLo; latHi < 8; latHi++ {
			for lonLo := uint32(0); lonLo < 8; lonLo++ {
				for lonHi := lonLo; lonHi < 8; lonHi++ {
					r := geoRect{latLo, latHi, lonLo, lonHi}
					for z := uint64(0); z < 64; z++ {
						check(r, z, 64)
					}
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		a, b := uint32(rng.IntN(geoIndexMax+1)), uint32(rng.IntN(geoIndexMax+1))
		c, d := uint32(rng.IntN(geoIndexMax+1)), uint32(rng.IntN(geoIndexMax+1))
		if rng.IntN(2) == 0 { // small rectangles, as searches use
			b, d = min(a+uint32(rng.IntN(300)), geoIndexMax), min(c+uint32(rng.IntN(300)), geoIndexMax)
		}
		r := geoRect{min(a, b), max(a, b), min(c, d), max(c, d)}
		z := r.first() + uint64(rng.Int64N(int64(r.last()-r.first()+1)))
		if rng.IntN(4) == 0 {
			z = rng.Uint64N(1 << 52)
		}
		check(r, z, 4096)
	}
}

// TestGeoSearchRect checks that the rectangle bounding a search holds
// every position inside the shape: shapes of all sizes, near the poles,
// the antimeridian and the equator, and points on and around the shape's
// edge in every direction.
func TestGeoSearchRect(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	lats := []float64{0, 0.5, -30, 60, 84.9, -85, 80, 45}
	lons := []float64{0, 179.99, -179.99, 100, -45}
	for round := range 4000 {
		sh := geoShape{lon: lons[round%len(lons)] + rng.Float64()*0.01, lat: lats[round/len(lons)%len(lats)] + rng.Float64()*0.01, conversion: 1}
		sh.lon, sh.lat = min(max(sh.lon, geoLonMin), geoLonMax), min(max(sh.lat, geoLatMin), geoLatMax)
		sh.radius = math.Pow(10, rng.Float64()*7.5) // 1 m to 30000 km
		if round%3 == 1 {
			sh.box, sh.width, sh.height = true, 2*sh.radius*rng.Float64(), 2*sh.radius*rng.Float64()
		}
		sh.prepare()
		r := sh.searchRect()
		for range 50 {
			d := sh.radius * (1 + (rng.Float64()-0.5)*1e-3)
			angle := rng.Float64() * 2 * math.Pi
			lon := sh.lon + d*math.Cos(angle)/geoEarthRadius/geoDegToRad/math.Cos(sh.lat*geoDegToRad)
			lat := sh.lat + d*math.Sin(angle)/geoEarthRadius/geoDegToRad
			if sh.box {
				lon = sh.lon + (rng.Float64()-0.5)*1.01*sh.width/geoEarthRadius/geoDegToRad/math.Cos(sh.lat*geoDegToRad)
				lat = sh.lat + (rng.Float64()-0.5)*1.01*sh.height/geoEarthRadius/geoDegToRad
			}
			if lon < geoLonMin || lon > geoLonMax || lat < geoLatMin || lat > geoLatMax {
				continue
			}
			score := geoScore(lon, lat)
			plon, plat := geoDecodeScore(float64(score))
			var in bool
			if sh.box {
				_, _, in = sh.withinExact(plon, plat)
			} else {
				in = geoDistance(sh.lon, sh.lat, plon, plat) <= sh.radius
			}
			if in && !r.contains(score) {
				t.Fatalf("round %d: shape %+v: point %v,%v inside it is outside its rectangle %+v", round, sh, plon, plat, r)
			}
		}
	}
}

// TestGeoMembersInShape checks the search's walk against the walk of every
// member of Redis's cells: the same members in the same order, packed and
// skip list sets, circles and boxes of many sizes, with and without a
// limit.
func TestGeoMembersInShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	lim := keyspace.DefaultZLimits()
	for round := range 60 {
		z := keyspace.NewZSet()
		n := []int{50, 3000, 20000}[round%3]
		// Wide spreads put members and centres on the clamped edges of
		// the map, where the positions overflow 52 bits.
		spread := []float64{0.01, 1, 40, 100}[round/3%4]
		for i := range n {
			lon := min(max(rng.NormFloat64()*spread, geoLonMin), geoLonMax)
			lat := min(max(rng.NormFloat64()*spread, geoLatMin), geoLatMax)
			z.AddString(strconv.Itoa(i), float64(geoScore(lon, lat)), lim)
		}
		var sc geoScratch
		for q := range 20 {
			sh := geoShape{lon: rng.NormFloat64() * spread, lat: rng.NormFloat64() * spread, conversion: 1}
			sh.lon, sh.lat = min(max(sh.lon, geoLonMin), geoLonMax), min(max(sh.lat, geoLatMin), geoLatMax)
			sh.radius = spread * 111000 * math.Pow(10, rng.Float64()*2-1.5)
			if q%2 == 1 {
				sh.box, sh.width, sh.height = true, 2*sh.radius*rng.Float64(), 2*sh.radius*rng.Float64()
			}
			sh.prepare()
			var want []string
			cells := sh.cells()
			last := 0
			for i, c := range cells {
				if c.zero() || last != 0 && c == cells[last] {
					continue
				}
				last = i
				r := keyspace.ScoreRange{Min: float64(c.align52()), Max: float64(geoBits{c.bits + 1, c.step}.align52()), MaxEx: true}
				for x := z.FirstInScore(&r); x.Valid() && x.Score() < r.Max; x = x.Next() {
					lon, lat := geoDecodeScore(x.Score())
					if _, _, ok := sh.within(lon, lat); ok {
						want = append(want, x.Member())
					}
				}
			}
			for _, limit := range []int{0, 1, 7} {
				var got []string
				for _, p := range geoMembersInShape(z, &sh, limit, &sc) {
					got = append(got, p.member)
				}
				sc.release()
				w := want
				if limit > 0 && len(w) > limit {
					w = w[:limit]
				}
				if !slices.Equal(got, w) {
					t.Fatalf("round %d query %d limit %d: found %d members %v, want %d %v", round, q, limit, len(got), got, len(w), w)
				}
			}
		}
	}
}

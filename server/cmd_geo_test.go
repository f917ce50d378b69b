package server

import (
	"math"
	"strings"
	"testing"
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
			[][]string{{"ZADD", "g", "3.479099956230698e+15", "Palermo", "3.479447370796909e+15", "Catania"}}},
		{[]string{"GEOADD", "g", "NX", "1", "1", "Palermo"}, ":0\r\n", nil},
		{[]string{"GEOADD", "g", "1", "100", "x"}, "-ERR invalid longitude,latitude pair 1.000000,100.000000\r\n", nil},
		{[]string{"GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC"}, ":2\r\n",
			[][]string{{"DEL", "d"}, {"ZADD", "d", "3.479447370796909e+15", "Catania", "3.479099956230698e+15", "Palermo"}}},
		{[]string{"GEORADIUS", "g", "15", "37", "100", "km", "STOREDIST", "d"}, ":1\r\n",
			[][]string{{"DEL", "d"}, {"ZADD", "d", "56.4412578701582", "Catania"}}},
		{[]string{"GEORADIUS", "g", "0", "0", "1", "km", "STORE", "d"}, ":0\r\n", [][]string{{"DEL", "d"}}},
		{[]string{"GEORADIUS", "g", "0", "0", "1", "km", "STORE", "d"}, ":0\r\n", nil},
	})
}

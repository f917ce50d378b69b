package server

import (
	"math"
	"strconv"
)

// Geohash arithmetic of the GEO commands, computed as Redis 7.0 computes
// it so that scores, cells, distances and therefore search results are
// Redis's: a position is a 52-bit interleaved geohash (26 bits of latitude
// in the even bits, 26 of longitude in the odd ones) over the Web Mercator
// latitude range, stored as a sorted set score.
const (
	geoStepMax     = 26 // 26*2 = 52 bits
	geoLatMin      = -85.05112878
	geoLatMax      = 85.05112878
	geoLonMin      = -180.0
	geoLonMax      = 180.0
	geoEarthRadius = 6372797.560856 // metres, Redis's quadratic mean radius
	geoMercatorMax = 20037726.37
	geoDegToRad    = math.Pi / 180.0
)

// geoBits is a geohash of step*2 bits.
type geoBits struct {
	bits uint64
	step uint8
}

func (h geoBits) zero() bool { return h.bits == 0 && h.step == 0 }

// geoRange is an interval of one coordinate.
type geoRange struct{ min, max float64 }

// geoArea is the cell of a geohash.
type geoArea struct {
	hash     geoBits
	lon, lat geoRange
}

// The coordinate ranges: Redis's own (Web Mercator latitudes) and the
// standard geohash ranges GEOHASH reports strings in.
var (
	geoLonRange    = geoRange{geoLonMin, geoLonMax}
	geoLatRange    = geoRange{geoLatMin, geoLatMax}
	geoStdLatRange = geoRange{-90, 90}
)

// geoInterleave spreads the bits of x over the even bits and those of y
// over the odd bits of the result.
func geoInterleave(x, y uint32) uint64 {
	return geoSpread(uint64(x)) | geoSpread(uint64(y))<<1
}

// geoSpread moves bit i of the low 32 bits of v to bit 2i.
func geoSpread(v uint64) uint64 {
	v = (v | v<<16) & 0x0000FFFF0000FFFF
	v = (v | v<<8) & 0x00FF00FF00FF00FF
	v = (v | v<<4) & 0x0F0F0F0F0F0F0F0F
	v = (v | v<<2) & 0x3333333333333333
	v = (v | v<<1) & 0x5555555555555555
	return v
}

// geoSquash is geoSpread's inverse: bit 2i of v moves to bit i.
func geoSquash(v uint64) uint64 {
	v &= 0x5555555555555555
	v = (v | v>>1) & 0x3333333333333333
	v = (v | v>>2) & 0x0F0F0F0F0F0F0F0F
	v = (v | v>>4) & 0x00FF00FF00FF00FF
	v = (v | v>>8) & 0x0000FFFF0000FFFF
	v = (v | v>>16) & 0x00000000FFFFFFFF
	return v
}

// geoEncode returns the step-bit geohash of a position within the ranges;
// false for a position outside Redis's limits or the ranges.
func geoEncode(lonR, latR geoRange, lon, lat float64, step uint8) (geoBits, bool) {
	if step > 32 || step == 0 {
		return geoBits{}, false
	}
	if lon > geoLonMax || lon < geoLonMin || lat > geoLatMax || lat < geoLatMin {
		return geoBits{}, false
	}
	if lat < latR.min || lat > latR.max || lon < lonR.min || lon > lonR.max {
		return geoBits{}, false
	}
	latOff := (lat - latR.min) / (latR.max - latR.min) * float64(uint64(1)<<step)
	lonOff := (lon - lonR.min) / (lonR.max - lonR.min) * float64(uint64(1)<<step)
	return geoBits{bits: geoInterleave(uint32(latOff), uint32(lonOff)), step: step}, true
}

// geoDecode returns the cell of a geohash.
func geoDecode(lonR, latR geoRange, h geoBits) geoArea {
	ilat := geoSquash(h.bits)
	ilon := geoSquash(h.bits >> 1)
	scale := float64(uint64(1) << h.step)
	latScale, lonScale := latR.max-latR.min, lonR.max-lonR.min
	return geoArea{
		hash: h,
		// The cell's far edge adds one as 32-bit arithmetic does.
		lat: geoRange{latR.min + float64(ilat)/scale*latScale, latR.min + float64(uint32(ilat+1))/scale*latScale},
		lon: geoRange{lonR.min + float64(ilon)/scale*lonScale, lonR.min + float64(uint32(ilon+1))/scale*lonScale},
	}
}

// center returns the middle of the cell, within Redis's limits.
func (a geoArea) center() (lon, lat float64) {
	lon = min(max((a.lon.min+a.lon.max)/2, geoLonMin), geoLonMax)
	lat = min(max((a.lat.min+a.lat.max)/2, geoLatMin), geoLatMax)
	return lon, lat
}

// geoScoreBits converts a score to the integer C's (uint64_t) cast gives
// on amd64 (negative scores wrap as two's complement).
func geoScoreBits(score float64) uint64 {
	if score >= 1<<63 {
		return uint64(int64(score-(1<<63))) ^ 1<<63
	}
	return uint64(int64(score))
}

// geoDecodeScore returns the position a sorted set score encodes.
func geoDecodeScore(score float64) (lon, lat float64) {
	h := geoBits{bits: geoScoreBits(score), step: geoStepMax}
	return geoDecode(geoLonRange, geoLatRange, h).center()
}

// geoScore returns the 52-bit score of a valid position.
func geoScore(lon, lat float64) uint64 {
	h, _ := geoEncode(geoLonRange, geoLatRange, lon, lat, geoStepMax)
	return h.align52()
}

// align52 left-aligns the hash to 52 bits.
func (h geoBits) align52() uint64 { return h.bits << (52 - 2*uint(h.step)) }

// geoString returns the 11-character standard geohash of a score, as
// GEOHASH reports it: the position re-encoded over latitudes -90..90.
func geoString(score float64) string {
	const alphabet = "0123456789bcdefghjkmnpqrstuvwxyz"
	lon, lat := geoDecodeScore(score)
	h, _ := geoEncode(geoLonRange, geoStdLatRange, lon, lat, geoStepMax)
	var buf [11]byte
	for i := 0; i < 10; i++ {
		buf[i] = alphabet[(h.bits>>(52-(uint(i)+1)*5))&0x1f]
	}
	buf[10] = alphabet[0] // 52 bits fill ten characters; Redis pads with 0
	return string(buf[:])
}

// geoMove shifts a hash by one cell along longitude (x, the odd bits) or
// latitude (y, the even bits).
func (h geoBits) move(dx, dy int) geoBits {
	const xBits, yBits = 0xaaaaaaaaaaaaaaaa, 0x5555555555555555
	shift := 64 - 2*uint(h.step)
	h.bits = geoMoveAxis(h.bits, dx, xBits, yBits, shift)
	h.bits = geoMoveAxis(h.bits, dy, yBits, xBits, shift)
	return h
}

// geoMoveAxis moves the coordinate interleaved in the bits of mask (the
// other one's bits are other) one cell up for d > 0, down for d < 0, in a
// hash whose unused low bits number shift.
func geoMoveAxis(bits uint64, d int, mask, other uint64, shift uint) uint64 {
	if d == 0 {
		return bits
	}
	v := bits & mask
	zz := other >> shift
	if d > 0 {
		v += zz + 1
	} else {
		v = (v | zz) - (zz + 1)
	}
	v &= mask >> shift
	return v | bits&other
}

// geoShape is a search area: a circle of radius, or a width by height box,
// around a centre, its sizes in the unit conversion converts to metres.
type geoShape struct {
	box                   bool
	lon, lat              float64
	conversion            float64
	radius, width, height float64
	bounds                [4]float64 // min lon, min lat, max lon, max lat

	// The centre's trigonometry, computed once per search by prepare:
	// its latitude in radians and that latitude's cosine, correctly
	// rounded (cosLat) and by Go's math (cosLatFast).
	lonRad, latRad, cosLat, cosLatFast float64
}

// prepare computes the centre's trigonometry the distance functions of
// the shape use.
func (sh *geoShape) prepare() {
	sh.lonRad, sh.latRad = sh.lon*geoDegToRad, sh.lat*geoDegToRad
	sh.cosLat, sh.cosLatFast = geoCos(sh.latRad), math.Cos(sh.latRad)
}

// geoStepsByRadius estimates the precision of the cells a search of
// rangeM metres around latitude lat needs.
func geoStepsByRadius(rangeM, lat float64) uint8 {
	if rangeM == 0 {
		return 26
	}
	step := 1
	for rangeM < geoMercatorMax {
		rangeM *= 2
		step++
	}
	step -= 2
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint8(min(max(step, 1), 26))
}

// boundingBox sets the shape's bounds.
func (sh *geoShape) boundingBox() {
	height, width := sh.conversion*sh.radius, sh.conversion*sh.radius
	if sh.box {
		height, width = sh.conversion*(sh.height/2), sh.conversion*(sh.width/2)
	}
	latDelta := height / geoEarthRadius / geoDegToRad
	lonDeltaTop := width / geoEarthRadius / geoCos((sh.lat+latDelta)*geoDegToRad) / geoDegToRad
	lonDeltaBottom := width / geoEarthRadius / geoCos((sh.lat-latDelta)*geoDegToRad) / geoDegToRad
	if sh.lat < 0 {
		sh.bounds[0], sh.bounds[2] = sh.lon-lonDeltaBottom, sh.lon+lonDeltaBottom
	} else {
		sh.bounds[0], sh.bounds[2] = sh.lon-lonDeltaTop, sh.lon+lonDeltaTop
	}
	sh.bounds[1], sh.bounds[3] = sh.lat-latDelta, sh.lat+latDelta
}

// cells returns the nine cells that cover the shape, centre first, then
// north, south, east, west, north-east, north-west, south-east, south-west;
// a cell the shape cannot reach is zero.
func (sh *geoShape) cells() [9]geoBits {
	sh.boundingBox()
	minLon, minLat, maxLon, maxLat := sh.bounds[0], sh.bounds[1], sh.bounds[2], sh.bounds[3]
	radius := sh.radius
	if sh.box {
		radius = math.Sqrt(sh.width/2*(sh.width/2) + sh.height/2*(sh.height/2))
	}
	radius *= sh.conversion
	steps := geoStepsByRadius(radius, sh.lat)
	hash, _ := geoEncode(geoLonRange, geoLatRange, sh.lon, sh.lat, steps)
	decode := func(h geoBits) geoArea { return geoDecode(geoLonRange, geoLatRange, h) }
	north, south := decode(hash.move(0, 1)), decode(hash.move(0, -1))
	east, west := decode(hash.move(1, 0)), decode(hash.move(-1, 0))
	if steps > 1 && (north.lat.max < maxLat || south.lat.min > minLat || east.lon.max < maxLon || west.lon.min > minLon) {
		steps--
		hash, _ = geoEncode(geoLonRange, geoLatRange, sh.lon, sh.lat, steps)
	}
	area := decode(hash)
	n := [9]geoBits{hash,
		hash.move(0, 1), hash.move(0, -1), hash.move(1, 0), hash.move(-1, 0),
		hash.move(1, 1), hash.move(-1, 1), hash.move(1, -1), hash.move(-1, -1)}
	const (
		cN, cS, cE, cW, cNE, cNW, cSE, cSW = 1, 2, 3, 4, 5, 6, 7, 8
	)
	if steps >= 2 {
		if area.lat.min < minLat {
			n[cS], n[cSW], n[cSE] = geoBits{}, geoBits{}, geoBits{}
		}
		if area.lat.max > maxLat {
			n[cN], n[cNE], n[cNW] = geoBits{}, geoBits{}, geoBits{}
		}
		if area.lon.min < minLon {
			n[cW], n[cSW], n[cNW] = geoBits{}, geoBits{}, geoBits{}
		}
		if area.lon.max > maxLon {
			n[cE], n[cSE], n[cNE] = geoBits{}, geoBits{}, geoBits{}
		}
	}
	return n
}

// geoLatDistance is the distance in metres between two latitudes.
func geoLatDistance(lat1, lat2 float64) float64 {
	return geoEarthRadius * math.Abs(lat2*geoDegToRad-lat1*geoDegToRad)
}

// geoDistance is the haversine distance in metres between two positions.
func geoDistance(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r, lon2r := lon1*geoDegToRad, lon2*geoDegToRad
	v := geoSin((lon2r - lon1r) / 2)
	if v == 0 {
		return geoLatDistance(lat1, lat2)
	}
	lat1r, lat2r := lat1*geoDegToRad, lat2*geoDegToRad
	u := geoSin((lat2r - lat1r) / 2)
	a := u*u + geoCos(lat1r)*geoCos(lat2r)*v*v
	return 2.0 * geoEarthRadius * geoAsin(math.Sqrt(a))
}

// The error bound of the fast distances: a distance d computed with Go's
// math functions (geoFastDistance) differs from the correctly rounded one
// (geoDistance) by at most d*geoFastRel + geoFastAbs. The formula only adds
// and multiplies non-negative terms, each off by an ulp or two, and takes
// asin where it is well-conditioned (geoFastDistance refuses the rest), so
// the true error is below 1e-14 relative; the bound leaves a wide margin.
const (
	geoFastRel = 1e-9
	geoFastAbs = 1e-9 // metres
)

// geoFastDistance is geoDistance computed with Go's math functions, to
// within the error bound above, from the centre of sh; false where asin's
// argument is too close to 1 for the bound to hold (nearly antipodal
// points), and the caller must compute exactly.
func (sh *geoShape) fastDistance(lon, lat float64) (float64, bool) {
	v := math.Sin((lon*geoDegToRad - sh.lonRad) / 2)
	if v == 0 {
		return geoLatDistance(sh.lat, lat), true
	}
	lat2r := lat * geoDegToRad
	u := math.Sin((lat2r - sh.latRad) / 2)
	a := u*u + sh.cosLatFast*math.Cos(lat2r)*v*v
	if a > 0.5 {
		return 0, false
	}
	return 2.0 * geoEarthRadius * math.Asin(math.Sqrt(a)), true
}

// exactDistance is geoDistance from the centre of sh, with the centre's
// cosine computed once.
func (sh *geoShape) exactDistance(lon, lat float64) float64 {
	v := geoSin((lon*geoDegToRad - sh.lonRad) / 2)
	if v == 0 {
		return geoLatDistance(sh.lat, lat)
	}
	lat2r := lat * geoDegToRad
	u := geoSin((lat2r - sh.latRad) / 2)
	a := u*u + sh.cosLat*geoCos(lat2r)*v*v
	return 2.0 * geoEarthRadius * geoAsin(math.Sqrt(a))
}

// geoFastCompare compares a fast distance with a limit: -1 when the exact
// distance is certainly <= limit, 1 when it is certainly > limit, 0 when
// the error bound cannot tell.
func geoFastCompare(fast, limit float64) int {
	switch e := fast*geoFastRel + geoFastAbs; {
	case fast+e < limit:
		return -1
	case fast-e > limit:
		return 1
	}
	return 0
}

// within reports whether a position is inside the shape (Redis's test on
// exact distances), and its distance in metres from the centre: exact when
// exact is true, otherwise a fast one within the error bound. The shape
// must be prepared.
func (sh *geoShape) within(lon, lat float64) (dist float64, exact, ok bool) {
	if !sh.box {
		limit := sh.radius * sh.conversion
		// The great-circle distance is at least the latitudes' distance,
		// which needs no trigonometry: most candidates of a search's
		// cells are rejected by it.
		if geoFastCompare(geoLatDistance(sh.lat, lat), limit) == 1 {
			return 0, false, false
		}
		d, fast := sh.fastDistance(lon, lat)
		if fast {
			switch geoFastCompare(d, limit) {
			case -1:
				return d, false, true
			case 1:
				return 0, false, false
			}
		}
		d = sh.exactDistance(lon, lat)
		return d, true, d <= limit
	}
	if geoLatDistance(lat, sh.lat) > sh.height*sh.conversion/2 {
		return 0, false, false
	}
	// The east-west extent at the point's latitude.
	halfWidth := sh.width * sh.conversion / 2
	across := geoShape{lon: lon, lat: lat, lonRad: lon * geoDegToRad, latRad: lat * geoDegToRad}
	across.cosLatFast = math.Cos(across.latRad)
	w, fast := across.fastDistance(sh.lon, lat)
	cmp := 0
	if fast {
		cmp = geoFastCompare(w, halfWidth)
	}
	if cmp == 0 && geoDistance(lon, lat, sh.lon, lat) > halfWidth || cmp == 1 {
		return 0, false, false
	}
	if d, fast := sh.fastDistance(lon, lat); fast {
		return d, false, true
	}
	return sh.exactDistance(lon, lat), true, true
}

// geoAppendDistance formats a distance with four decimals, rounded half
// to even as Redis's llrint does.
func geoAppendDistance(b []byte, d float64) []byte {
	if d == 0 {
		return append(b, "0.0000"...)
	}
	v := math.RoundToEven(d * 10000)
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	digits := strconv.AppendUint(nil, uint64(v), 10)
	for len(digits) < 5 {
		digits = append([]byte{'0'}, digits...)
	}
	b = append(b, digits[:len(digits)-4]...)
	b = append(b, '.')
	return append(b, digits[len(digits)-4:]...)
}

// geoAppendCoord formats a coordinate as Redis's "human" long double: 17
// decimals, trailing zeros and a trailing point removed, "-0" as "0".
func geoAppendCoord(b []byte, f float64) []byte {
	start := len(b)
	b = strconv.AppendFloat(b, f, 'f', 17, 64)
	for b[len(b)-1] == '0' {
		b = b[:len(b)-1]
	}
	if b[len(b)-1] == '.' {
		b = b[:len(b)-1]
	}
	if string(b[start:]) == "-0" {
		b = append(b[:start], '0')
	}
	return b
}

// The trigonometric functions of the distance formulas, rounded as C's
// libm rounds them: Go's math.Sin, Cos and Asin differ from glibc's in the
// last bit for a quarter of the arguments, which changes the distances
// STOREDIST stores. These evaluate in double-double arithmetic (about 106
// bits) and round once, which is what glibc's results are but in rare
// cases. They handle the arguments the formulas produce: |x| <= 2π for
// geoSin and geoCos, 0 <= y <= 1 for geoAsin.

// dd is an unevaluated sum hi+lo of two doubles, |lo| <= ulp(hi)/2.
type dd struct{ hi, lo float64 }

func ddTwoSum(a, b float64) dd {
	s := a + b
	bb := s - a
	return dd{s, (a - (s - bb)) + (b - bb)}
}

func ddQuick(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

func ddAdd(x, y dd) dd {
	s := ddTwoSum(x.hi, y.hi)
	t := ddTwoSum(x.lo, y.lo)
	s.lo += t.hi
	s = ddQuick(s.hi, s.lo)
	s.lo += t.lo
	return ddQuick(s.hi, s.lo)
}

func ddMul(x, y dd) dd {
	p := x.hi * y.hi
	e := math.FMA(x.hi, y.hi, -p)
	e += x.hi*y.lo + x.lo*y.hi
	return ddQuick(p, e)
}

func ddDivF(x dd, f float64) dd {
	q := x.hi / f
	p := q * f
	pe := math.FMA(q, f, -p)
	r := ((x.hi - p) - pe + x.lo) / f
	return ddQuick(q, r)
}

func (x dd) neg() dd { return dd{-x.hi, -x.lo} }

// ddPiO2 is π/2 in three parts, for argument reduction.
var ddPiO2 = [3]float64{1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33}

// geoTaylor holds 1/n! for n up to 29 in double-double.
var geoTaylor = func() (t [30]dd) {
	t[0] = dd{1, 0}
	for n := 1; n < len(t); n++ {
		t[n] = ddDivF(t[n-1], float64(n))
	}
	return t
}()

// ddSinCosReduced returns sin r and cos r for |r| <= π/4.
func ddSinCosReduced(r dd) (sin, cos dd) {
	r2 := ddMul(r, r)
	// Horner from the highest terms: sin r = r(1 - r²/3! + r⁴/5! - …),
	// cos r = 1 - r²/2! + r⁴/4! - …
	var s, c dd
	for n := 14; n >= 0; n-- {
		ts, tc := geoTaylor[2*n+1], geoTaylor[2*n]
		if n%2 == 1 {
			ts, tc = ts.neg(), tc.neg()
		}
		s = ddAdd(ddMul(s, r2), ts)
		c = ddAdd(ddMul(c, r2), tc)
	}
	return ddMul(s, r), c
}

// ddSinCos returns sin x and cos x in double-double.
func ddSinCos(x float64) (sin, cos dd) {
	k := math.Round(x / ddPiO2[0])
	r := ddTwoSum(x, -k*ddPiO2[0]) // exact: |k| <= 4
	r = ddAdd(r, dd{-k * ddPiO2[1], 0})
	r = ddAdd(r, dd{-k * ddPiO2[2], 0})
	s, c := ddSinCosReduced(r)
	switch int(k) & 3 {
	case 1:
		return c, s.neg()
	case 2:
		return s.neg(), c.neg()
	case 3:
		return c.neg(), s
	}
	return s, c
}

func geoSin(x float64) float64 {
	if x == 0 || math.Abs(x) > 8 {
		return math.Sin(x)
	}
	s, _ := ddSinCos(x)
	return s.hi + s.lo
}

func geoCos(x float64) float64 {
	if math.Abs(x) > 8 {
		return math.Cos(x)
	}
	_, c := ddSinCos(x)
	return c.hi + c.lo
}

// ddAsinSmall returns asin y for 0 <= y <= 0.71 in double-double: one
// Newton step on sin t = y from Go's estimate.
func ddAsinSmall(y dd) dd {
	t := math.Asin(y.hi)
	s, c := ddSinCos(t)
	diff := ddAdd(y, s.neg())
	// t + (y - sin t)/cos t, the quotient to double precision
	q := (diff.hi + diff.lo) / (c.hi + c.lo)
	return ddAdd(dd{t, 0}, dd{q, 0})
}

func geoAsin(y float64) float64 {
	if y < 0 || y > 1 || y == 0 {
		return math.Asin(y)
	}
	if y <= 0.5 {
		a := ddAsinSmall(dd{y, 0})
		return a.hi + a.lo
	}
	// asin y = π/2 - 2 asin(sqrt((1-y)/2)); 1-y is exact here.
	z := (1 - y) / 2
	sq := math.Sqrt(z)
	sqd := ddQuick(sq, -math.FMA(sq, sq, -z)/(2*sq)) // z - sq² is exact
	a := ddAsinSmall(sqd)
	a = ddAdd(dd{ddPiO2[0], ddPiO2[1]}, dd{-2 * a.hi, -2 * a.lo})
	return a.hi + a.lo
}

// geoRect is a rectangle of positions: the latitude indexes (a position's
// even bits) latLo to latHi and the longitude indexes (its odd bits) lonLo
// to lonHi, inclusive. A search walks only the positions of its cells
// inside the rectangle that bounds its shape.
type geoRect struct{ latLo, latHi, lonLo, lonHi uint32 }

// geoIndexMax is the largest coordinate index: 26 bits, and one more for
// the latitude or longitude at the top of its range, whose index overflows
// into bit 26 as in Redis (the positions beyond 52 bits).
const geoIndexMax = 1 << geoStepMax

func (r geoRect) empty() bool { return r.latLo > r.latHi || r.lonLo > r.lonHi }

// intersect returns the rectangle common to r and o.
func (r geoRect) intersect(o geoRect) geoRect {
	return geoRect{max(r.latLo, o.latLo), min(r.latHi, o.latHi), max(r.lonLo, o.lonLo), min(r.lonHi, o.lonHi)}
}

// geoCellRect returns the rectangle of the positions of a cell.
func geoCellRect(h geoBits) geoRect {
	lat, lon := uint32(geoSquash(h.bits)), uint32(geoSquash(h.bits>>1))
	shift := geoStepMax - uint(h.step)
	return geoRect{lat << shift, (lat+1)<<shift - 1, lon << shift, (lon+1)<<shift - 1}
}

// contains reports whether the position z is inside the rectangle.
func (r geoRect) contains(z uint64) bool {
	lat, lon := uint32(geoSquash(z)), uint32(geoSquash(z>>1))
	return lat >= r.latLo && lat <= r.latHi && lon >= r.lonLo && lon <= r.lonHi
}

// first and last return the lowest and highest position inside the
// rectangle: the interleaving orders positions by each coordinate.
func (r geoRect) first() uint64 { return geoInterleave(r.latLo, r.lonLo) }
func (r geoRect) last() uint64  { return geoInterleave(r.latHi, r.lonHi) }

// next returns the lowest position inside the rectangle above z, which is
// outside it; false when there is none. It is the "BIGMIN" computation of
// Tropf and Herzog's range search on a Z-order curve: going down the bits,
// where z, the rectangle's first and its last position differ, either the
// answer is decided or the rectangle is cut in two along that bit's
// coordinate and the search goes on in the half z is in, remembering the
// first position of the upper half as the answer should z's half hold
// none above z.
func (r geoRect) next(z uint64) (uint64, bool) {
	const latBits, lonBits = 0x5555555555555555, 0xaaaaaaaaaaaaaaaa
	lo, hi := r.first(), r.last()
	var found uint64
	ok := false
	for p := 2*geoStepMax + 1; p >= 0; p-- {
		bit := uint64(1) << p
		dim := uint64(latBits)
		if p&1 == 1 {
			dim = lonBits
		}
		below := dim & (bit - 1) // the lower bits of the same coordinate
		switch zb, lb, hb := z&bit != 0, lo&bit != 0, hi&bit != 0; {
		case !zb && !lb && hb:
			// Cut: the upper half starts at lo with this bit set and the
			// coordinate's lower bits clear; z goes on in the lower half.
			found, ok = lo&^below|bit, true
			hi = hi&^bit | below
		case !zb && lb && hb:
			// The whole remaining rectangle is above z.
			return lo, true
		case zb && !lb && !hb:
			// The whole remaining rectangle is below z.
			return found, ok
		case zb && !lb && hb:
			// z is in the upper half: go on there.
			lo = lo&^below | bit
		}
	}
	return found, ok
}

// geoLatIndex and geoLonIndex return the index of the 26-bit cell column
// holding a coordinate, clamped to the grid.
func geoLatIndex(lat float64) uint32 {
	return geoIndex((lat - geoLatMin) / (geoLatMax - geoLatMin))
}

func geoLonIndex(lon float64) uint32 {
	return geoIndex((lon - geoLonMin) / (geoLonMax - geoLonMin))
}

func geoIndex(frac float64) uint32 {
	v := math.Floor(frac * (1 << geoStepMax))
	return uint32(min(max(v, 0), geoIndexMax))
}

// searchRect returns a rectangle outside of which no position is inside
// the shape, with a margin far above the rounding of the distance
// formulas: the latitudes within the radius (or half the height), since a
// great-circle distance is at least the distance between the latitudes,
// and the longitudes a point of those latitudes can differ by and still
// be within the radius (half the width), by the haversine formula. A
// shape that reaches a pole or the antimeridian gets every longitude.
func (sh *geoShape) searchRect() geoRect {
	const rel, abs = 1e-9, 1e-12 // radians
	halfLat, halfLon := sh.radius, sh.radius
	if sh.box {
		halfLat, halfLon = sh.height/2, sh.width/2
	}
	halfLat, halfLon = halfLat*sh.conversion, halfLon*sh.conversion
	dLat := (halfLat/geoEarthRadius*(1+rel) + abs) / geoDegToRad
	latLo, latHi := sh.lat-dLat, sh.lat+dLat
	r := geoRect{geoLatIndex(latLo), geoLatIndex(latHi), 0, geoIndexMax}
	// One column more each side covers positions decoded onto a
	// column's edge.
	r.latLo, r.latHi = max(r.latLo, 1)-1, min(r.latHi+1, geoIndexMax)
	far := max(math.Abs(latLo), math.Abs(latHi))
	half := halfLon / geoEarthRadius / 2 // half the angle, radians
	if far >= 89 || half >= 1.5 {
		return r
	}
	// A point at latitude lat within the distance has
	// cos(lat0)·cos(lat)·sin²(dLon/2) <= sin²(d/2R) (circle), or
	// cos²(lat)·sin²(dLon/2) <= sin²(w/2R) along its latitude (box).
	s := math.Sin(half) / math.Cos(far*geoDegToRad)
	if !sh.box {
		s = math.Sin(half) / math.Sqrt(math.Cos(sh.lat*geoDegToRad)*math.Cos(far*geoDegToRad))
	}
	if s >= 0.99 {
		return r
	}
	dLon := (2*math.Asin(s)*(1+rel) + abs) / geoDegToRad
	lonLo, lonHi := sh.lon-dLon, sh.lon+dLon
	if lonLo < geoLonMin || lonHi > geoLonMax {
		return r
	}
	r.lonLo, r.lonHi = max(geoLonIndex(lonLo), 1)-1, min(geoLonIndex(lonHi)+1, geoIndexMax)
	return r
}

package server

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// benchGeoArgs returns a GEOADD of one member with redisbench's
// arguments, formatted into buf: a position in the one-degree square at
// 0,0 written as __rand_int__e-6 and a member m:__rand_int__, over a
// million values.
func benchGeoArgs(rng *rand.Rand, args [][]byte, buf []byte) ([][]byte, []byte) {
	pad := func(b []byte, v int) []byte {
		s := strconv.Itoa(v)
		for range 12 - len(s) {
			b = append(b, '0')
		}
		return append(b, s...)
	}
	buf = buf[:0]
	buf = append(pad(buf, rng.IntN(1000000)), "e-6"...)
	lon := len(buf)
	buf = append(pad(buf, rng.IntN(1000000)), "e-6"...)
	lat := len(buf)
	buf = pad(append(buf, "m:"...), rng.IntN(1000000))
	args = append(args[:0], []byte("GEOADD"), []byte("bench:geo"), buf[:lon], buf[lon:lat], buf[lat:])
	return args, buf
}

// benchGeoSession returns a session whose bench:geo holds the members of
// a million GEOADDs of benchGeoArgs.
func benchGeoSession(b *testing.B, rng *rand.Rand) *Session {
	s := plainSession(b)
	var args [][]byte
	var buf []byte
	for range 1000000 {
		args, buf = benchGeoArgs(rng, args, buf)
		s.W.B = s.W.B[:0]
		s.Exec(args)
	}
	return s
}

// BenchmarkGeoAdd measures GEOADD of one member into a set of a million,
// new members and moved ones as redisbench's GEOADD row sends them.
func BenchmarkGeoAdd(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := benchGeoSession(b, rng)
	var args [][]byte
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		args, buf = benchGeoArgs(rng, args, buf)
		s.W.B = s.W.B[:0]
		s.Exec(args)
	}
}

// BenchmarkGeoSearchCmd measures redisbench's GEOSEARCH row: FROMLONLAT
// BYRADIUS 1 km ASC COUNT 10 among a million members.
func BenchmarkGeoSearchCmd(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := benchGeoSession(b, rng)
	ops := make([][][]byte, 1024)
	for i := range ops {
		g, _ := benchGeoArgs(rng, nil, nil)
		ops[i] = toArgs("GEOSEARCH", "bench:geo", "FROMLONLAT", string(g[2]), string(g[3]), "BYRADIUS", "1", "km", "ASC", "COUNT", "10")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.W.B = s.W.B[:0]
		s.Exec(ops[i%len(ops)])
	}
}

// BenchmarkPFAddNew measures PFADD of one element to a key that does not
// exist yet, as redisbench's "pfadd new key" row sends it.
func BenchmarkPFAddNew(b *testing.B) {
	s := plainSession(b)
	args := toArgs("PFADD", "", "")
	var key, ele [32]byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.W.B = s.W.B[:0]
		args[1] = strconv.AppendInt(append(key[:0], "hll:"...), int64(i), 10)
		args[2] = strconv.AppendInt(ele[:0], int64(i), 10)
		s.Exec(args)
	}
}

package server

import (
	"strconv"
	"testing"
)

// BenchmarkExecSetEvicting is SET of new keys into a server at maxmemory
// under allkeys-lru: every SET evicts about one key.
func BenchmarkExecSetEvicting(b *testing.B) {
	s := plainSession(b)
	run(s, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
	run(s, "CONFIG", "SET", "maxmemory", "8mb")
	val := make([]byte, 100)
	args := [][]byte{[]byte("SET"), nil, val}
	var num [24]byte
	for i := 0; s.srv.mem.evicted.Load() == 0 && i < 1e6; i++ {
		args[1] = strconv.AppendInt(append(num[:0], "key:"...), int64(i), 10)
		s.W.B = s.W.B[:0]
		s.Exec(args)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		args[1] = strconv.AppendInt(append(num[:0], "new:"...), int64(i), 10)
		s.W.B = s.W.B[:0]
		s.Exec(args)
	}
	b.StopTimer()
	if used, limit := s.srv.UsedMemory(), s.srv.mem.limit.Load(); used > limit+4096 {
		b.Fatalf("used memory %d over maxmemory %d", used, limit)
	}
}

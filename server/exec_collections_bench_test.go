package server

import (
	"strconv"
	"testing"
)

// BenchmarkExecNewCollection creates a ten-element collection under a new
// key and deletes it, per type: the path of redisbench's memory rows (a
// key created by the command that fills it).
func BenchmarkExecNewCollection(b *testing.B) {
	rows := []struct {
		name string
		cmd  func(i int) []string
	}{
		{"SADD", func(i int) []string {
			c := []string{"SADD", "s:000001"}
			for j := range 10 {
				c = append(c, strconv.Itoa(i*10+j))
			}
			return c
		}},
		{"ZADD", func(i int) []string {
			c := []string{"ZADD", "z:000001"}
			for j := range 10 {
				c = append(c, strconv.Itoa(i+j), "member:"+strconv.Itoa(j))
			}
			return c
		}},
		{"HSET", func(i int) []string {
			c := []string{"HSET", "h:000001"}
			for j := range 10 {
				c = append(c, "field:"+strconv.Itoa(j), "v:"+strconv.Itoa(i*10+j))
			}
			return c
		}},
		{"RPUSH", func(i int) []string {
			c := []string{"RPUSH", "l:000001"}
			for j := range 10 {
				c = append(c, "item:"+strconv.Itoa(i*10+j))
			}
			return c
		}},
	}
	for _, r := range rows {
		b.Run(r.name, func(b *testing.B) {
			s := plainSession(b)
			in := toArgs(r.cmd(1000)...)
			del := toArgs("DEL", string(in[1]))
			b.ReportAllocs()
			for b.Loop() {
				s.W.B = s.W.B[:0]
				s.Exec(in)
				s.Exec(del)
			}
		})
	}
}

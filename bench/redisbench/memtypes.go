package main

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// memRow is one data set of the memory table: how many keys it makes and
// the command that writes key i, one command per key.
type memRow struct {
	name  string // what -memonly selects: strings, hash, set, zset, list, stream
	label string // what the table prints
	keys  int    // keys the load leaves (DBSIZE checks it)
	cmds  int    // commands the load sends
	cmd   func(i int) []string
	key   string // a key whose OBJECT ENCODING the table shows, if any
}

// memRows are the rows of the memory table: the strings row when
// strings > 0, with -memtypes the four collection rows, with -datatypes
// the stream row when streamEntries > 0, and the channels row when
// channels > 0; only those whose name is in only when only is not empty.
func memRows(strs int, types bool, streamEntries, channels int, only string) []memRow {
	var rows []memRow
	if strs > 0 {
		// 11-byte keys, 16-byte values.
		rows = append(rows, memRow{name: "strings", label: fmt.Sprintf("%d strings 11B keys 16B values", strs),
			keys: strs, cmds: strs, key: "k:000000000",
			cmd: func(i int) []string {
				return []string{"SET", fmt.Sprintf("k:%09d", i), fmt.Sprintf("value:%010d", i)}
			}})
	}
	if types {
		const n = 100000
		rows = append(rows,
			memRow{name: "hash", label: "100000 hashes of 10 short fields", keys: n, cmds: n, key: "h:000000",
				cmd: func(i int) []string {
					c := []string{"HSET", fmt.Sprintf("h:%06d", i)}
					for j := 0; j < 10; j++ {
						c = append(c, "field:"+strconv.Itoa(j), "v:"+strconv.Itoa(i*10+j))
					}
					return c
				}},
			memRow{name: "set", label: "100000 sets of 10 integers", keys: n, cmds: n, key: "s:000000",
				cmd: func(i int) []string {
					c := []string{"SADD", fmt.Sprintf("s:%06d", i)}
					for j := 0; j < 10; j++ {
						c = append(c, strconv.Itoa(i*10+j))
					}
					return c
				}},
			memRow{name: "zset", label: "100000 sorted sets of 10 members", keys: n, cmds: n, key: "z:000000",
				cmd: func(i int) []string {
					c := []string{"ZADD", fmt.Sprintf("z:%06d", i)}
					for j := 0; j < 10; j++ {
						c = append(c, strconv.Itoa(i+j), "member:"+strconv.Itoa(j))
					}
					return c
				}},
			memRow{name: "list", label: "100000 lists of 10 short items", keys: n, cmds: n, key: "l:000000",
				cmd: func(i int) []string {
					c := []string{"RPUSH", fmt.Sprintf("l:%06d", i)}
					for j := 0; j < 10; j++ {
						c = append(c, "item:"+strconv.Itoa(i*10+j))
					}
					return c
				}},
		)
	}
	if streamEntries > 0 {
		rows = append(rows, memRow{name: "stream", label: fmt.Sprintf("1 stream of %d entries of 3 fields", streamEntries),
			keys: 1, cmds: streamEntries, key: "bench:mem",
			cmd: func(i int) []string {
				return []string{"XADD", "bench:mem", "*", "sensor", strconv.Itoa(i % 1000), "value", "v:" + strconv.Itoa(i), "unit", "celsius"}
			}})
	}
	if channels > 0 {
		// What the channel history (SPEC section 9) costs: redis-server
		// keeps nothing of a publication nobody receives.
		rows = append(rows, memRow{name: "channels", label: fmt.Sprintf("%d channels, 1 PUBLISH each", channels),
			cmds: channels,
			cmd: func(i int) []string {
				return []string{"PUBLISH", fmt.Sprintf("ch:%09d", i), "hello"}
			}})
	}
	if only == "" {
		return rows
	}
	names := strings.Split(only, ",")
	return slices.DeleteFunc(rows, func(r memRow) bool { return !slices.Contains(names, r.name) })
}

// memSample is one round of one row: each server's resident memory growth
// in bytes and the OBJECT ENCODING of the row's sample key.
type memSample struct {
	rc, redis   int64
	rcEnc, rEnc string
}

// memoryTable measures every row rounds times and prints, per row, the
// median resident memory growth of both servers, their ratio and the range
// of the ratio over the rounds.
//
// A round of a row starts a fresh server of each kind (the same flags as
// the CPU rows, no persistence), reads each one's RSS, loads both with the
// same pipelined client one after the other (the order rotated each
// round), lets both sit idle for 3 s and reads RSS again: the growth is
// what the data costs, collector garbage and allocator slack included. No
// MEMORY PURGE on either side: both are measured as a user would see them.
func memoryTable(recachedBin, dir string, rows []memRow, rounds int) {
	if len(rows) == 0 {
		return
	}
	res := make([][]memSample, len(rows))
	for r := 0; r < rounds; r++ {
		for i, row := range rows {
			res[i] = append(res[i], measureRow(recachedBin, filepath.Join(dir, "mem"), row, r%2 == 1))
		}
	}
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	fmt.Printf("\nresident memory growth after loading, both idle 3 s, no purge (MiB, median of %d rounds):\n", rounds)
	fmt.Printf("%-40s %10s %10s %7s %13s  %s\n", "data set", "redis", "recached", "ratio", "ratio range", "encoding redis/recached")
	for i, row := range rows {
		s := res[i]
		ratios := make([]float64, len(s))
		for j, x := range s {
			ratios[j] = float64(x.rc) / float64(max(x.redis, 1))
		}
		rc := medianInt(s, func(x memSample) int64 { return x.rc })
		redis := medianInt(s, func(x memSample) int64 { return x.redis })
		fmt.Printf("%-40s %10.1f %10.1f %6.2fx %5.2f-%5.2fx  %s/%s\n", row.label, mib(redis), mib(rc),
			float64(rc)/float64(max(redis, 1)), slices.Min(ratios), slices.Max(ratios), s[0].rEnc, s[0].rcEnc)
	}
}

// measureRow is one round of one row of memoryTable; redisFirst loads
// redis-server first.
func measureRow(recachedBin, dir string, row memRow, redisFirst bool) memSample {
	servers := []*server{
		startServer("recached", recachedBin, dir, "--ws-port", "0", "--appendonly", "no", "--save", ""),
		startServer("redis", "redis-server", dir, "--save", "", "--appendonly", "no"),
	}
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	order := []*server{servers[0], servers[1]}
	if redisFirst {
		order[0], order[1] = order[1], order[0]
	}
	base := map[string]int64{}
	enc := map[string]string{}
	for _, s := range order {
		base[s.name] = s.rss()
		cn, err := dialRESP(s.addr)
		if err != nil {
			log.Fatal(err)
		}
		if err := cn.pipelineN(row.cmds, row.cmd); err != nil {
			log.Fatalf("memory row %s on %s: %v", row.name, s.name, err)
		}
		if v, err := cn.do("DBSIZE"); err != nil || v.str != strconv.Itoa(row.keys) {
			log.Fatalf("memory row %s on %s: DBSIZE %q, want %d (%v)", row.name, s.name, v.str, row.keys, err)
		}
		if row.key != "" {
			v, err := cn.do("OBJECT", "ENCODING", row.key)
			if err != nil {
				log.Fatalf("memory row %s on %s: %v", row.name, s.name, err)
			}
			enc[s.name] = v.str
		}
		cn.c.Close()
	}
	time.Sleep(3 * time.Second)
	got := memSample{rcEnc: enc["recached"], rEnc: enc["redis"]}
	got.rc = servers[0].rss() - base["recached"]
	got.redis = servers[1].rss() - base["redis"]
	fmt.Fprintf(os.Stderr, "memory %-8s redis %7.1f MiB  recached %7.1f MiB\n", row.name, float64(got.redis)/(1<<20), float64(got.rc)/(1<<20))
	return got
}

// medianInt is the median of f over s.
func medianInt(s []memSample, f func(memSample) int64) int64 {
	v := make([]int64, len(s))
	for i, x := range s {
		v[i] = f(x)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

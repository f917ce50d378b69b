package server

import (
	"bytes"
	"log"
	"sort"
	"strconv"
	"sync"
)

// maxErrorCodes bounds the distinct codes INFO errorstats keeps. Redis 7.0
// keeps every code it sees, so a script answering redis.error_reply with a
// new first word each time grows the table without end; later Redis
// versions stop adding codes at 128, and so does recached. The replies
// still count in total_error_replies.
const maxErrorCodes = 128

// errorStats counts error replies by their code, for INFO errorstats.
// Error replies are rare next to the commands that succeed, so one mutex
// is enough.
type errorStats struct {
	mu     sync.Mutex
	counts map[string]int64
	full   bool // the limit was reached and logged
}

// countError accounts for one error reply, reply being its RESP bytes
// ("-CODE message\r\n"), in total_error_replies and INFO errorstats.
func (srv *Server) countError(reply []byte) {
	srv.errorReplies.Add(1)
	code := errorCode(reply)
	st := &srv.errStats
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.counts[code]; !ok && len(st.counts) >= maxErrorCodes {
		if !st.full {
			st.full = true
			log.Printf("recached: INFO errorstats keeps %d error codes and no more; CONFIG RESETSTAT clears them", maxErrorCodes)
		}
		return
	}
	if st.counts == nil {
		st.counts = make(map[string]int64)
	}
	st.counts[code]++
}

// errorCode is the code INFO errorstats files an error reply under, as
// Redis reads it: the word after the '-' when a space ends it within the
// first 32 bytes, ERR otherwise.
func errorCode(reply []byte) string {
	if len(reply) < 2 || reply[0] != '-' {
		return "ERR"
	}
	head := reply[:min(len(reply), 32)]
	sp := bytes.IndexByte(head, ' ')
	if sp < 0 {
		return "ERR"
	}
	return string(reply[1:sp])
}

// reset clears the counts (CONFIG RESETSTAT).
func (st *errorStats) reset() {
	st.mu.Lock()
	st.counts = nil
	st.full = false
	st.mu.Unlock()
}

// info returns the errorstats section's fields, sorted by code as Redis's
// radix tree lists them.
func (st *errorStats) info() [][2]string {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([][2]string, 0, len(st.counts))
	for code, n := range st.counts {
		out = append(out, [2]string{"errorstat_" + code, "count=" + strconv.FormatInt(n, 10)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// countBlockedError accounts for an error reply that ends the blocked
// command of s: an error reply, and a failed call of that command, as Redis
// counts a blocked client that is unblocked with an error.
func (srv *Server) countBlockedError(s *Session, reply []byte) {
	srv.countError(reply)
	if c := s.lastCmd.Load(); c != nil {
		c.stats.failed.Add(1)
	}
}

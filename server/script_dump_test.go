package server_test

import (
	"encoding/binary"
	"strconv"
	"strings"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/snapshot/rdb"
)

// bulkBody returns the payload of a RESP bulk string reply.
func bulkBody(t *testing.T, reply string) string {
	t.Helper()
	head, rest, ok := strings.Cut(reply, "\r\n")
	n, err := strconv.Atoi(strings.TrimPrefix(head, "$"))
	if !ok || err != nil || head[0] != '$' || len(rest) != n+2 {
		t.Fatalf("not a bulk string: %q", reply)
	}
	return rest[:n]
}

// functionPayload is a FUNCTION DUMP payload of the given body (records),
// with a good footer.
func functionPayload(body ...byte) string {
	b := binary.LittleEndian.AppendUint16(body, rdb.Version)
	return string(binary.LittleEndian.AppendUint64(b, rdb.CRC64(0, b)))
}

// rdbString is s as a short RDB string (at most 16383 bytes).
func rdbString(s string) []byte {
	return append([]byte{0x40 | byte(len(s)>>8), byte(len(s))}, s...)
}

// TestFunctionDumpMatchesRedis: FUNCTION DUMP of redis-server RESTOREs
// into recached and the reverse, with the same libraries listed and
// callable; both servers dump the same libraries to the same bytes, and
// answer bad payloads with the same errors.
func TestFunctionDumpMatchesRedis(t *testing.T) {
	rd := servertest.Dial(t, servertest.StartRedis(t))
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	rc := servertest.Dial(t, addr)
	libs := []string{
		"#!lua name=short\nredis.register_function('f_short', function(keys, args) return 'short' end)",
		"#!lua name=long\n" + strings.Repeat("-- a comment that compresses well\n", 40) +
			"redis.register_function{function_name='f_long', callback=function() return 'long' end, flags={'no-writes'}, description='d'}",
	}
	for _, c := range []*servertest.Client{rd, rc} {
		for _, l := range libs {
			servertest.MustDo(t, c, "FUNCTION", "LOAD", l)
		}
	}
	// One library at a time: the dump's order of several is the order of
	// Redis's dictionary.
	for _, name := range []string{"short", "long"} {
		for _, c := range []*servertest.Client{rd, rc} {
			servertest.MustDo(t, c, "FUNCTION", "FLUSH")
			for _, l := range libs {
				if strings.Contains(l, "name="+name+"\n") {
					servertest.MustDo(t, c, "FUNCTION", "LOAD", l)
				}
			}
		}
		want := servertest.MustDo(t, rd, "FUNCTION", "DUMP")
		if got := servertest.MustDo(t, rc, "FUNCTION", "DUMP"); got != want {
			t.Fatalf("FUNCTION DUMP of %s:\nrecached %q\nredis    %q", name, got, want)
		}
	}

	// Both ways: redis -> recached and recached -> redis.
	for _, dir := range []struct {
		name     string
		from, to *servertest.Client
	}{{"redis to recached", rd, rc}, {"recached to redis", rc, rd}} {
		t.Run(dir.name, func(t *testing.T) {
			for _, c := range []*servertest.Client{dir.from, dir.to} {
				servertest.MustDo(t, c, "FUNCTION", "FLUSH")
			}
			for _, l := range libs {
				servertest.MustDo(t, dir.from, "FUNCTION", "LOAD", l)
			}
			payload := bulkBody(t, servertest.MustDo(t, dir.from, "FUNCTION", "DUMP"))
			if got := servertest.MustDo(t, dir.to, "FUNCTION", "RESTORE", payload); got != "+OK\r\n" {
				t.Fatalf("FUNCTION RESTORE: %q", got)
			}
			for _, f := range []string{"f_short", "f_long"} {
				a := servertest.MustDo(t, dir.from, "FCALL", f, "0")
				if b := servertest.MustDo(t, dir.to, "FCALL", f, "0"); a != b {
					t.Fatalf("FCALL %s: %q after the restore, %q before", f, b, a)
				}
			}
			for _, lib := range []string{"short", "long"} {
				a := servertest.MustDo(t, dir.from, "FUNCTION", "LIST", "LIBRARYNAME", lib, "WITHCODE")
				if b := servertest.MustDo(t, dir.to, "FUNCTION", "LIST", "LIBRARYNAME", lib, "WITHCODE"); a != b {
					t.Fatalf("FUNCTION LIST %s:\nrestored %q\ndumped   %q", lib, b, a)
				}
			}
			// APPEND (the default) refuses a library that exists (one
			// only: which of two a server meets first is the order of its
			// dictionary).
			for _, c := range []*servertest.Client{dir.from, dir.to} {
				servertest.MustDo(t, c, "FUNCTION", "DELETE", "long")
			}
			a := servertest.MustDo(t, dir.from, "FUNCTION", "RESTORE", payload)
			if b := servertest.MustDo(t, dir.to, "FUNCTION", "RESTORE", payload); a != b {
				t.Fatalf("second FUNCTION RESTORE: %q, %q on the dumping server", b, a)
			}
		})
	}

	bad := "#!lua name=bad\nredis.register_function('x', function() return 1 end"
	good := "#!lua name=good\nredis.register_function('g', function() return 1 end)"
	good2 := "#!lua name=good2\nredis.register_function('g', function() return 2 end)"
	tests := []struct{ name, payload string }{
		{"empty", ""},
		{"no footer", "garbage"},
		{"bad checksum", functionPayload(0xf5, 0x01, 'a')[:12] + "x"},
		{"newer version", string(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint16(nil, 99), rdb.CRC64(0, binary.LittleEndian.AppendUint16(nil, 99))))},
		{"no libraries", functionPayload()},
		{"not a function", functionPayload(0x00, 0x01, 'a')},
		{"compile error", functionPayload(append([]byte{0xf5}, rdbString(bad)...)...)},
		{"no metadata", functionPayload(append([]byte{0xf5}, rdbString("return 1")...)...)},
		{"function twice", functionPayload(append(append([]byte{0xf5}, rdbString(good)...), append([]byte{0xf5}, rdbString(good2)...)...)...)},
		{"good then not a function", functionPayload(append(append([]byte{0xf5}, rdbString(good)...), 0x00)...)},
		{"bad length", functionPayload(0xf5, 0xc5)},
		{"release candidate format, cut", functionPayload(0xf6, 0x01, 'a')},
		{"release candidate format with a shebang: a compile error", functionPayload(append([]byte{0xf6, 0x04, 'g', 'o', 'o', 'd', 0x03, 'L', 'U', 'A', 0x00}, rdbString(good)...)...)},
		{"release candidate format", functionPayload(append([]byte{0xf6, 0x04, 'g', 'o', 'o', 'd', 0x03, 'L', 'U', 'A', 0x01, 0x01, 'd'}, rdbString("redis.register_function('g', function() return 1 end)")...)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got [2]string
			for i, c := range []*servertest.Client{rd, rc} {
				servertest.MustDo(t, c, "FUNCTION", "FLUSH")
				got[i] = servertest.MustDo(t, c, "FUNCTION", "RESTORE", tt.payload) + servertest.MustDo(t, c, "FUNCTION", "LIST")
			}
			if strings.Contains(tt.name, "compile error") {
				// gopher-lua's parser words its errors unlike Lua 5.1's
				// (the EVAL differential cases compare the ones that
				// match); the reply and the state must still agree.
				for i := range got {
					msg, list, _ := strings.Cut(got[i], "\r\n")
					msg, _, _ = strings.Cut(msg, "user_function:")
					got[i] = msg + list
				}
			}
			if got[0] != got[1] {
				t.Fatalf("FUNCTION RESTORE and LIST:\nrecached %q\nredis    %q", got[1], got[0])
			}
		})
	}
}

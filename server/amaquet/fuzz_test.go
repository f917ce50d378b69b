package amaquet

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// FuzzFrameReader reads frames from arbitrary bytes: it never panics, a
// header it accepts satisfies every rule of the seed's table and SPEC
// section 10, one it rejects breaks one, and a frame re-encoded from what
// was read is the bytes that were read.
func FuzzFrameReader(f *testing.F) {
	ok := AppendFrame(nil, KindRequest, OpCommand, 7, []byte(`{"command":"PING"}`))
	f.Add(ok)
	f.Add(append(append([]byte(nil), ok...), ok...))
	f.Add(ok[:23])
	f.Add(ok[:30])
	f.Add(AppendFrame(nil, KindResponse, OpCommand, 7, nil))
	f.Add(AppendFrame(nil, KindRequest, 99, 1<<63, []byte("x")))
	bad := append([]byte(nil), ok...)
	bad[6] = 1
	f.Add(bad)
	f.Add([]byte("AMQT\x02\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		const max = 1 << 10
		fr := FrameReader{R: bufio.NewReaderSize(bytes.NewReader(data), 16), MaxPayload: max}
		off := 0
		var payload []byte
		for frames := 0; frames < 1000; frames++ {
			h, err := fr.ReadHeader()
			if errors.Is(err, io.EOF) {
				if off != len(data) {
					t.Fatalf("EOF at %d of %d", off, len(data))
				}
				return
			}
			var fe *FrameError
			if errors.As(err, &fe) {
				raw := data[off : off+HeaderSize]
				valid := string(raw[:4]) == "AMQT" && raw[4] == 1 && raw[5] == 1 &&
					binary.BigEndian.Uint16(raw[6:]) == 0 && binary.BigEndian.Uint16(raw[10:]) == 0 &&
					binary.BigEndian.Uint32(raw[20:]) <= max
				if valid {
					t.Fatalf("rejected a valid header %x: %v", raw, fe)
				}
				if h.ID != binary.BigEndian.Uint64(raw[12:]) || h.Opcode != binary.BigEndian.Uint16(raw[8:]) {
					t.Fatalf("rejected header reports id %d op %d", h.ID, h.Opcode)
				}
				return
			}
			if err != nil {
				if !errors.Is(err, ErrTruncated) || len(data)-off >= HeaderSize {
					t.Fatalf("header error %v with %d bytes left", err, len(data)-off)
				}
				return
			}
			if h.Kind != KindRequest || h.Version != Version || h.Flags != 0 || h.Reserved != 0 || h.Length > max {
				t.Fatalf("accepted header %+v", h)
			}
			payload, err = fr.ReadPayload(payload, h.Length)
			if err != nil {
				if len(data)-off-HeaderSize >= int(h.Length) {
					t.Fatalf("payload error %v with the payload there", err)
				}
				return
			}
			again := AppendFrame(nil, h.Kind, h.Opcode, h.ID, payload)
			if n := len(again); !bytes.Equal(again, data[off:off+n]) {
				t.Fatalf("re-encoded frame %x, read %x", again, data[off:off+n])
			}
			off += len(again)
		}
	})
}

// FuzzCommandRequest decodes arbitrary COMMAND payloads: never a panic,
// and a payload it accepts decodes to the arguments encoding/json reads.
func FuzzCommandRequest(f *testing.F) {
	for _, s := range []string{
		`{"command":"GET","args":["k"]}`,
		`{"command":"SET","args":["k",{"base64":"/w=="}],"db":3}`,
		`{"transaction":[["SET","a","1"],["INCR","a"]],"db":0}`,
		`{ "args" : [ "a\u00e9\ud83d\ude00\\\"\n" ] , "command" : "ECHO" }`,
		`{"command":"x","args":[]}`,
		`{"command":"\ud800"}`,
		`{"command":"a","args":["\ud800\u0041"]}`,
		`{}`, `[]`, `{"command":"GET","args":["k"]}x`,
		`{"command":"PING"}`, `{"command":"","args":[]}`, `{"command":"X","args":["a",]}`,
		`{"command":"X","args":["a""b"]}`, `{"command":"X","args":["a]"]}`, `{"command":"X","args":["a"]]}`,
		`{"command":"X","args":["\u0041"]}`, "{\"command\":\"X\",\"args\":[\"\x7f\"]}", `{"command":"X","args":"a"}`,
		`{"command":"X"`, `{"command":"X",}`, `{"command":"X","args":[],"db":1}`,
	} {
		f.Add([]byte(s))
	}
	var r, full commandRequest
	f.Fuzz(func(t *testing.T, p []byte) {
		if r.parsePlain(p) {
			// The fast path accepts only what the full decoder does, with
			// the same result.
			if err := full.parseFull(p); err != nil {
				t.Fatalf("parsePlain accepted %q, parseFull refuses: %v", p, err)
			}
			sameArgs(t, r.args, full.args)
			if full.isTxn || full.db != 0 {
				t.Fatalf("parsePlain accepted %q as a command of db 0", p)
			}
		}
		err := r.parse(p)
		if err != nil {
			return
		}
		var ref struct {
			Command     *string             `json:"command"`
			Args        []json.RawMessage   `json:"args"`
			Transaction [][]json.RawMessage `json:"transaction"`
			DB          int                 `json:"db"`
		}
		d := json.NewDecoder(bytes.NewReader(p))
		d.DisallowUnknownFields()
		if err := d.Decode(&ref); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", p, err)
		}
		if ref.DB != r.db {
			t.Fatalf("db %d, encoding/json %d", r.db, ref.DB)
		}
		want := [][][]byte{}
		if r.isTxn {
			for _, c := range ref.Transaction {
				want = append(want, refArgs(t, c))
			}
			if len(want) != len(r.txn) {
				t.Fatalf("%d commands, encoding/json %d", len(r.txn), len(want))
			}
			for i := range want {
				sameArgs(t, r.txn[i], want[i])
			}
			return
		}
		name, _ := json.Marshal(*ref.Command)
		sameArgs(t, r.args, refArgs(t, append([]json.RawMessage{name}, ref.Args...)))
	})
}

// refArgs decodes arguments with encoding/json.
func refArgs(t *testing.T, raw []json.RawMessage) [][]byte {
	var out [][]byte
	for _, a := range raw {
		var s string
		if json.Unmarshal(a, &s) == nil {
			out = append(out, []byte(s))
			continue
		}
		var o struct {
			Base64 string `json:"base64"`
		}
		if err := json.Unmarshal(a, &o); err != nil {
			t.Fatalf("argument %s: %v", a, err)
		}
		b, err := base64.StdEncoding.DecodeString(o.Base64)
		if err != nil {
			t.Fatalf("argument %s: %v", a, err)
		}
		out = append(out, b)
	}
	return out
}

func sameArgs(t *testing.T, got, want [][]byte) {
	if len(got) != len(want) {
		t.Fatalf("%d arguments %q, encoding/json %d %q", len(got), got, len(want), want)
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("argument %d %q, encoding/json %q", i, got[i], want[i])
		}
	}
}

// FuzzReply maps arbitrary bytes as a RESP reply: never a panic, and
// what it maps is valid JSON.
func FuzzReply(f *testing.F) {
	for _, s := range []string{
		"$5\r\nhello\r\n", "$-1\r\n", "*2\r\n:1\r\n+a\r\n", "%1\r\n:1\r\n$1\r\nx\r\n",
		"%1\r\n$1\r\nk\r\n~1\r\n#t\r\n", ",1.5\r\n", ",inf\r\n", "_\r\n", "(123456789012345678901234\r\n",
		"=8\r\ntxt:abcd\r\n", "-ERR x\r\n", "!3\r\nERR\r\n", "|1\r\n+a\r\n+b\r\n:2\r\n", ":9007199254740993\r\n",
		"*1\r\n-WRONGTYPE x\r\n", "$2\r\n\xff\xfe\r\n", ">2\r\n+a\r\n+b\r\n",
		"+OK\r\n", "$0\r\n\r\n", "$3\r\na\"\\\r\n", "$3\r\nab\x7f\r\n", "$05\r\nhello\r\n", "$5\r\nhello\r\nx", "$99999999999\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := appendReply(nil, b)
		if err == nil && !json.Valid(out) {
			t.Fatalf("%q maps to invalid JSON %q", b, out)
		}
		if _, ok := wholeBulk(b); ok || string(b) == "+OK\r\n" {
			// The fast paths map as the general walk does.
			v, _, err := appendValue([]byte(`{"ok":true,"result":`), b, 0)
			if err != nil || string(out) != string(v)+"}" {
				t.Fatalf("%q maps to %q, the general walk to %q (%v)", b, out, v, err)
			}
		}
	})
}

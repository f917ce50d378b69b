package amaquet

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// The header layout of the seed, byte by byte.
func TestAppendFrameLayout(t *testing.T) {
	got := AppendFrame(nil, KindRequest, OpCommand, 42, []byte(`{}`))
	want, _ := hex.DecodeString("414d5154" + "01" + "01" + "0000" + "0001" + "0000" + "000000000000002a" + "00000002" + "7b7d")
	if !bytes.Equal(got, want) {
		t.Fatalf("frame\n got %x\nwant %x", got, want)
	}
}

// ParseHeader refuses each field of a server frame made invalid in turn.
func TestParseHeader(t *testing.T) {
	good := AppendFrame(nil, KindResponse, OpHello, 7, []byte("xyz"))
	if h, err := ParseHeader(good, 10); err != nil || h.ID != 7 || h.Length != 3 || h.Opcode != OpHello || h.Kind != KindResponse {
		t.Fatalf("good header: %+v %v", h, err)
	}
	for _, tc := range []struct {
		name  string
		patch func([]byte)
		max   uint32
	}{
		{"magic", func(b []byte) { b[0] = 'B' }, 10},
		{"version", func(b []byte) { b[4] = 2 }, 10},
		{"kind request", func(b []byte) { b[5] = 1 }, 10},
		{"kind 4", func(b []byte) { b[5] = 4 }, 10},
		{"flags", func(b []byte) { b[6] = 0x80 }, 10},
		{"reserved", func(b []byte) { b[10] = 1 }, 10},
		{"length", func(b []byte) {}, 2},
	} {
		b := append([]byte(nil), good...)
		tc.patch(b)
		if _, err := ParseHeader(b, tc.max); !errors.Is(err, ErrBadFrame) {
			t.Errorf("%s: %v, want ErrBadFrame", tc.name, err)
		}
	}
	if _, err := ReadFrame(bytes.NewReader(good[:26]), make([]byte, HeaderSize), 10); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated payload: %v", err)
	}
}

// Results decode to Go values; base64 objects to bytes.
func TestDecodeResult(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
	}{
		{`"OK"`, "OK"},
		{`null`, nil},
		{`12`, int64(12)},
		{`-9007199254740993`, int64(-9007199254740993)},
		{`1.5`, 1.5},
		{`true`, true},
		{`{"base64":"/wA="}`, []byte{0xff, 0}},
		{`["a",{"base64":"AQ=="},[1,null]]`, []any{"a", []byte{1}, []any{int64(1), nil}}},
		{`{"f":"v","n":2}`, map[string]any{"f": "v", "n": int64(2)}},
		{`{"base64":"AQ==","x":1}`, map[string]any{"base64": "AQ==", "x": int64(1)}},
		{`["OK",{"error":{"code":"WRONGTYPE","message":"WRONGTYPE Operation"}}]`, []any{"OK", &Error{Code: CodeWrongType, Message: "WRONGTYPE Operation"}}},
	} {
		got, err := DecodeResult([]byte(tc.in))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("DecodeResult(%s) = %#v %v, want %#v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{`{`, `"a" "b"`, `{"base64":"!!"}`} {
		if _, err := DecodeResult([]byte(bad)); err == nil {
			t.Errorf("DecodeResult(%s) accepted", bad)
		}
	}
}

// Arguments encode as JSON that decodes back to the same bytes.
func TestAppendCommand(t *testing.T) {
	b, err := appendCommand(nil, "SET", []any{"k\"\\\n\x01é", []byte{0xff}, 12, int64(-3), uint64(7), 0.5})
	if err != nil {
		t.Fatal(err)
	}
	want := `["SET","k\"\\\n\u0001é",{"base64":"/w=="},"12","-3","7","0.5"]`
	if string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
	if _, err := appendCommand(nil, "SET", []any{struct{}{}}); err == nil {
		t.Fatal("a struct argument was accepted")
	}
}

// FuzzArgs: any argument bytes survive the JSON encoding.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{"", "plain", "quo\"te", "\x00\x1f\x7f", "\xff\xfe", "é日本", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := appendCommand(nil, "GET", []any{s})
		if err != nil {
			t.Fatal(err)
		}
		var v []any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%q encoded as invalid JSON %s: %v", s, b, err)
		}
		got, err := convert(v[1])
		if err != nil {
			t.Fatal(err)
		}
		switch g := got.(type) {
		case string:
			if !utf8.ValidString(s) || g != s {
				t.Fatalf("%q came back as %q", s, g)
			}
		case []byte:
			if utf8.ValidString(s) || string(g) != s {
				t.Fatalf("%q came back as bytes %q", s, g)
			}
		default:
			t.Fatalf("%q came back as %T", s, got)
		}
	})
}

// FuzzReadFrame: whatever a server sends, the client's reader and the
// decoders of envelopes, results, HELLO and events return a value or an
// error, never a panic, and never accept a header the protocol forbids.
func FuzzReadFrame(f *testing.F) {
	f.Add(AppendFrame(nil, KindResponse, OpCommand, 1, []byte(`{"ok":true,"result":["a",{"base64":"AA=="},1,2.5,null]}`)))
	f.Add(AppendFrame(nil, KindResponse, OpCommand, 2, []byte(`{"ok":false,"error":{"code":"NOT_FOUND","message":"key not found"}}`)))
	f.Add(AppendFrame(nil, KindEvent, OpSubscribe, 3, []byte(`{"channel":"c","payload":{"type":"bytes","value":"/w=="},"published_at":"2026-12-01T19:00:00.123456789Z","dropped":2}`)))
	f.Add(AppendFrame(nil, KindResponse, OpHello, 4, []byte(`{"server":"recached","version":"1","protocol":1,"public_key":"AAAA","signature":"AAAA"}`)))
	f.Add([]byte("AMQT\x01\x02\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05\xff\xff\xff\xff"))
	f.Add([]byte("AMQ"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		hdr := make([]byte, HeaderSize)
		var buf []byte // reused from frame to frame, as the link's reader does
		for off := 0; ; {
			fr, err := readFrame(r, hdr, buf, 1<<16)
			if err != nil {
				return
			}
			buf = fr.Payload
			if fr.Version != Version || (fr.Kind != KindResponse && fr.Kind != KindEvent) || fr.Flags != 0 || fr.Reserved != 0 || int(fr.Length) != len(fr.Payload) {
				t.Fatalf("accepted %+v", fr.Header)
			}
			off += HeaderSize + len(fr.Payload)
			if !bytes.Equal(fr.Payload, b[off-len(fr.Payload):off]) {
				t.Fatalf("payload %q, the input has %q", fr.Payload, b[off-len(fr.Payload):off])
			}
			if res, err := parseEnvelope(fr.Payload); err == nil {
				_, _ = DecodeResult(res)
			}
			_, _ = parseEvent(fr.Payload)
			_, _ = parseHello(fr.Payload)
		}
	})
}

// FuzzDecodeSimple: the fast path agrees with encoding/json wherever it
// answers.
func FuzzDecodeSimple(f *testing.F) {
	for _, s := range []string{`null`, `"abc"`, `"a\"b"`, `"\u00e9"`, `12`, `-7`, `1.5`, `"` + "\xff" + `"`, `007`, `-`, `""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) == 0 {
			return
		}
		got, ok := decodeSimple(raw)
		if !ok {
			return
		}
		var v any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&v); err != nil || d.More() {
			t.Fatalf("fast path accepted %q, encoding/json: %v", raw, err)
		}
		want, err := convert(v)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fast path %#v, encoding/json %#v %v", raw, got, want, err)
		}
	})
}

// The HELLO test vector of PROTOCOL-AMAQUET.md verifies, and fails with
// any other key, nonce or signature.
func TestHelloVector(t *testing.T) {
	doc, err := os.ReadFile("PROTOCOL-AMAQUET.md")
	if err != nil {
		t.Fatal(err)
	}
	field := func(name string) string {
		for _, l := range strings.Split(string(doc), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && strings.HasPrefix(l, name+" ") {
				return f[len(strings.Fields(name))]
			}
		}
		t.Fatalf("no %q line in PROTOCOL-AMAQUET.md", name)
		return ""
	}
	b64 := func(s string) []byte {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		return b
	}
	seed, _ := hex.DecodeString(field("identity seed"))
	key := ed25519.NewKeyFromSeed(seed)
	pub, nonce, sig := b64(field("public_key")), b64(field("nonce")), b64(field("signature"))
	if !bytes.Equal(pub, key.Public().(ed25519.PublicKey)) {
		t.Fatalf("public_key is not the seed's")
	}
	if signed, _ := hex.DecodeString(field("signed bytes")); !bytes.Equal(signed, append([]byte(HelloContext), nonce...)) {
		t.Fatalf("signed bytes are not %q + nonce", HelloContext)
	}
	h := Hello{Protocol: 1, PublicKey: pub, Signature: sig}
	if err := verifyHello(h, pub, nonce); err != nil {
		t.Fatalf("the vector does not verify: %v", err)
	}
	other, _, _ := ed25519.GenerateKey(nil)
	bad := append([]byte(nil), sig...)
	bad[0] ^= 1
	for _, tc := range []struct {
		name   string
		h      Hello
		pinned ed25519.PublicKey
		nonce  []byte
	}{
		{"other pinned key", h, other, nonce},
		{"other nonce", h, pub, append([]byte{1}, nonce[1:]...)},
		{"flipped signature bit", Hello{Protocol: 1, PublicKey: pub, Signature: bad}, pub, nonce},
		{"protocol 2", Hello{Protocol: 2, PublicKey: pub, Signature: sig}, pub, nonce},
	} {
		if err := verifyHello(tc.h, tc.pinned, tc.nonce); !errors.Is(err, ErrIdentity) {
			t.Errorf("%s: %v, want ErrIdentity", tc.name, err)
		}
	}
}

// Events decode with their typed payloads and the server's dropped count.
func TestParseEvent(t *testing.T) {
	for _, tc := range []struct {
		in      string
		typ     string
		data    string
		dropped uint64
	}{
		{`{"channel":"c","payload":{"type":"text","value":"hi"},"published_at":"2026-12-01T19:00:00.123456789Z"}`, "text", "hi", 0},
		{`{"channel":"c","payload":{"type":"bytes","value":"/wA="},"published_at":"2026-12-01T19:00:00Z","dropped":3}`, "bytes", "\xff\x00", 3},
		{`{"channel":"c","payload":{"type":"json","value":{"a":[1,2]}},"published_at":"2026-12-01T19:00:00Z"}`, "json", `{"a":[1,2]}`, 0},
	} {
		ev, err := parseEvent([]byte(tc.in))
		if err != nil || ev.Type != tc.typ || string(ev.Data) != tc.data || ev.Dropped != tc.dropped || ev.Channel != "c" || ev.PublishedAt.IsZero() {
			t.Errorf("parseEvent(%s) = %+v %v", tc.in, ev, err)
		}
	}
	for _, bad := range []string{`{"payload":{"type":"xml","value":"x"}}`, `{"payload":{"type":"bytes","value":"!!"}}`, `{"payload":{"type":"text","value":1}}`, `{"published_at":"yesterday","payload":{"type":"text","value":""}}`} {
		if _, err := parseEvent([]byte(bad)); err == nil {
			t.Errorf("parseEvent(%s) accepted", bad)
		}
	}
}

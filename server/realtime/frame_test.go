package realtime

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/recached/recached/sync/realtime/wire"
)

func TestDecodeRequest(t *testing.T) {
	long := strings.Repeat("c", MaxChannel+1)
	for _, tc := range []struct {
		name  string
		frame string
		want  string // "" for success, else the start of the 400's message
		id    string // the id the Nack names ("" for none)
	}{
		{"heartbeat", `{"op":11}`, "", ""},
		{"heartbeat id", `{"op":11,"id":"h1"}`, "", ""},
		{"subscribe", `{"op":13,"id":"1","channel":"chat:lobby","rewind":5,"filter":"^chat"}`, "", ""},
		{"publish data null", `{"op":3,"channel":"c","data":null}`, "", ""},
		{"op as 13.0", `{"op":13.0,"channel":"c"}`, "", ""},
		{"unknown fields ignored", `{"op":11,"extra":[1,2]}`, "", ""},
		{"not json", `hello`, "frame is not valid JSON", ""},
		{"truncated", `{"op":11`, "frame is not valid JSON", ""},
		{"array", `[1,2]`, "frame is not a JSON object", ""},
		{"string", `"op"`, "frame is not a JSON object", ""},
		{"null", `null`, "frame is not a JSON object", ""},
		{"number", ` 12 `, "frame is not a JSON object", ""},
		{"empty", ``, "frame is not valid JSON", ""},
		{"no op", `{"id":"1"}`, "op is required", `"1"`},
		{"op string", `{"op":"13","id":"x"}`, "op must be an integer", `"x"`},
		{"op fraction", `{"op":1.5}`, "op must be an integer", ""},
		{"op zero", `{"op":0}`, "unknown op 0", ""},
		{"op 16", `{"op":16,"id":"a"}`, "unknown op 16", `"a"`},
		{"op negative", `{"op":-1}`, "unknown op -1", ""},
		{"op huge", `{"op":1e300}`, "op must be an integer", ""},
		{"server op message", `{"op":4,"channel":"c"}`, "op 4 is sent by the server only", ""},
		{"server op connected", `{"op":12}`, "op 12 is sent by the server only", ""},
		{"id number", `{"op":11,"id":7}`, "id must be a string", `7`},
		{"id object", `{"op":11,"id":{}}`, "id must be a string", ""},
		{"missing channel", `{"op":13,"id":"1"}`, "channel is required", `"1"`},
		{"channel number", `{"op":3,"channel":5}`, "channel must be a string", ""},
		{"channel empty", `{"op":1,"channel":""}`, "channel must be 1 to 256 bytes", ""},
		{"channel long", `{"op":1,"channel":"` + long + `"}`, "channel must be 1 to 256 bytes", ""},
		{"name number", `{"op":3,"channel":"c","name":1}`, "name must be a string", ""},
		{"rewind string", `{"op":13,"channel":"c","rewind":"5"}`, "rewind must be a non-negative integer", ""},
		{"rewind negative", `{"op":13,"channel":"c","rewind":-1}`, "rewind must be a non-negative integer", ""},
		{"rewind fraction", `{"op":13,"channel":"c","rewind":2.5}`, "rewind must be a non-negative integer", ""},
		{"filter bool", `{"op":13,"channel":"c","filter":true}`, "filter must be a string", ""},
		{"clientId number", `{"op":5,"channel":"c","clientId":3}`, "clientId must be a string", ""},
		{"clientId empty", `{"op":5,"channel":"c","clientId":""}`, "clientId must be 1 to 256 bytes", ""},
		{"auth none", `{"op":15,"id":"a"}`, "Auth needs exactly one of", `"a"`},
		{"auth two", `{"op":15,"key":"s.k","token":"t"}`, "Auth needs exactly one of", ""},
		{"auth key number", `{"op":15,"key":1}`, "key must be a string", ""},
		{"invalid utf8", "{\"op\":3,\"channel\":\"\xff\"}", "frame is not valid UTF-8", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, ferr := decodeRequest([]byte(tc.frame))
			if tc.want == "" {
				if ferr != nil {
					t.Fatalf("decodeRequest(%s): %v", tc.frame, ferr)
				}
				if req.op == 0 {
					t.Fatalf("no op decoded")
				}
				return
			}
			if ferr == nil {
				t.Fatalf("decodeRequest(%s) = %+v, want 400 %q", tc.frame, req, tc.want)
			}
			if ferr.code != codeBadRequest || !strings.HasPrefix(ferr.message, tc.want) {
				t.Fatalf("decodeRequest(%s) = %d %q, want 400 %q", tc.frame, ferr.code, ferr.message, tc.want)
			}
			if string(ferr.id) != tc.id {
				t.Fatalf("Nack id %q, want %q", ferr.id, tc.id)
			}
		})
	}
}

func TestDecodeRequestFields(t *testing.T) {
	req, ferr := decodeRequest([]byte(`{"op":3,"id":"p\"1","channel":"chat:1","name":"","data":{ "a" : [1, 2] }}`))
	if ferr != nil {
		t.Fatal(ferr)
	}
	if string(req.id) != `"p\"1"` || req.channel != "chat:1" || !req.hasName || req.name != "" || string(req.data) != `{"a":[1,2]}` {
		t.Fatalf("decoded %+v", req)
	}
	req, _ = decodeRequest([]byte(`{"op":13,"channel":"c","rewind":1000}`))
	if req.rewind != MaxRewind {
		t.Fatalf("rewind %d, want the cap %d", req.rewind, MaxRewind)
	}
	req, _ = decodeRequest([]byte(`{"op":15,"accessToken":"tok"}`))
	if req.cred != "tok" || req.credKey {
		t.Fatalf("auth %+v", req)
	}
	req, _ = decodeRequest([]byte(`{"op":15,"key":"s.k"}`))
	if req.cred != "s.k" || !req.credKey {
		t.Fatalf("auth %+v", req)
	}
}

// TestServerFramesAreJSON checks that every server frame is one valid JSON
// object with the fields SPEC section 9 gives it, whatever the strings
// hold.
func TestServerFramesAreJSON(t *testing.T) {
	odd := "a\"b\\c\n\x01\u2028\xff end"
	for _, tc := range []struct {
		name  string
		frame []byte
		want  map[string]any
	}{
		{"connected", appendConnected(nil, "abc"), map[string]any{"op": 12.0, "connectionId": "abc", "connectionStateTtl": 120000.0, "maxMessageSize": 65536.0}},
		{"ack", appendAck(nil, []byte(`"7"`)), map[string]any{"op": 9.0, "id": "7"}},
		{"heartbeat", appendHeartbeat(nil, nil), map[string]any{"op": 11.0}},
		{"nack", appendNack(nil, nil, 403, "ch", odd), map[string]any{"op": 10.0, "code": 403.0, "channel": "ch", "message": strings.ToValidUTF8(odd, "\uFFFD")}},
		{"message", appendMessage(nil, &messageFields{channel: []byte("c"), strData: true, dataStr: []byte(odd), connID: "resp", unixMsec: 5}),
			map[string]any{"op": 4.0, "channel": "c", "data": strings.ToValidUTF8(odd, "\uFFFD"), "connectionId": "resp", "timestamp": 5.0}},
		{"message name data", appendMessage(nil, &messageFields{channel: []byte("c"), name: "n", hasName: true, data: []byte(`[1]`), connID: "x", unixMsec: 5}),
			map[string]any{"op": 4.0, "channel": "c", "name": "n", "data": []any{1.0}, "connectionId": "x", "timestamp": 5.0}},
		{"presence", appendPresence(nil, "c", "enter", "u1", "x", nil, 9),
			map[string]any{"op": 8.0, "channel": "c", "action": "enter", "clientId": "u1", "connectionId": "x", "timestamp": 9.0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !utf8.Valid(tc.frame) {
				t.Fatalf("%q is not UTF-8", tc.frame)
			}
			var got map[string]any
			if err := json.Unmarshal(tc.frame, &got); err != nil {
				t.Fatalf("%s: %v", tc.frame, err)
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tc.want)
			if string(gj) != string(wj) {
				t.Fatalf("frame %s\n got %s\nwant %s", tc.frame, gj, wj)
			}
		})
	}
}

// FuzzDecodeRequest feeds arbitrary frames to the decoder: it must never
// panic, must refuse with a 400 or accept, and what it accepts must be
// within the protocol's bounds; the strings it decodes must encode back
// into valid JSON.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"op":13,"id":"1","channel":"chat:*","filter":"^chat:[0-9]+$"}`,
		`{"op":13,"channel":"chat:lobby","rewind":100}`,
		`{"op":3,"id":"2","channel":"c","name":"n","data":{"x":[1,"\u00e9",null]}}`,
		`{"op":5,"channel":"c","clientId":"u","data":"hi"}`,
		`{"op":15,"id":"a","accessToken":"eyJ"}`,
		`{"op":11}`, `[]`, `null`, `{"op":"1"}`, `{"op":1e9}`, `{"op":4}`,
		"{\"op\":3,\"channel\":\"\xff\"}", `{"op":1,"channel":"` + strings.Repeat("x", 300) + `"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, ferr := decodeRequest(b)
		if ferr != nil {
			if ferr.code != codeBadRequest || ferr.message == "" {
				t.Fatalf("refusal %d %q", ferr.code, ferr.message)
			}
			nack := appendNack(nil, ferr.id, ferr.code, "", ferr.message)
			if !json.Valid(nack) {
				t.Fatalf("Nack %q is not JSON", nack)
			}
			return
		}
		if req.op < wire.Attach || req.op > wire.Auth {
			t.Fatalf("accepted op %d", req.op)
		}
		if req.rewind < 0 || req.rewind > MaxRewind || len(req.channel) > MaxChannel {
			t.Fatalf("accepted out of bounds: %+v", req)
		}
		if req.data != nil && !json.Valid(req.data) {
			t.Fatalf("data %q is not JSON", req.data)
		}
		m := appendMessage(nil, &messageFields{channel: []byte(req.channel), name: req.name, hasName: req.hasName, data: req.data, connID: req.clientID})
		if !json.Valid(m) {
			t.Fatalf("Message %q is not JSON", m)
		}
		if req.id != nil && !json.Valid(appendAck(nil, req.id)) {
			t.Fatalf("Ack of id %q is not JSON", req.id)
		}
	})
}

// FuzzAppendString checks the JSON string encoder against encoding/json:
// the same text once decoded, and always valid UTF-8.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\", "\x00\x1f", "\xff\xfe", "\u2028\u2029", "é中🙂"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendString(nil, s)
		var got, want string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q encodes to %q: %v", s, b, err)
		}
		ref, _ := json.Marshal(s)
		_ = json.Unmarshal(ref, &want)
		if got != want {
			t.Fatalf("%q decodes back to %q, encoding/json's to %q", s, got, want)
		}
		if !utf8.Valid(b) {
			t.Fatalf("%q encodes to invalid UTF-8 %q", s, b)
		}
	})
}

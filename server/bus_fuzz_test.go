package server

import (
	"encoding/json"
	"testing"
)

// FuzzRealtimeJSON: the RESP payload of a Blackevin Publish is valid JSON
// whatever the name, data and connection id, with the data kept as JSON
// when it is JSON and as a string otherwise.
func FuzzRealtimeJSON(f *testing.F) {
	f.Add("greeting", true, []byte(`{ "a" : [1, 2] }`), "conn-1", int64(1700000000000))
	f.Add("", false, []byte(nil), "", int64(0))
	f.Add("\xff\x00<", true, []byte(`not json`), "\"", int64(-1))
	f.Add("n", true, []byte(`"str"`), "c", int64(5))
	f.Fuzz(func(t *testing.T, name string, hasName bool, data []byte, id string, ms int64) {
		m := &RealtimeMeta{Name: name, HasName: hasName, Data: data, ConnectionID: id}
		out := appendRealtimeJSON(nil, m, ms)
		var v map[string]json.RawMessage
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%q is not a JSON object: %v", out, err)
		}
		if _, ok := v["name"]; ok != hasName {
			t.Fatalf("%q: name present %v, want %v", out, ok, hasName)
		}
		d, ok := v["data"]
		if ok != (data != nil) {
			t.Fatalf("%q: data present %v, want %v", out, ok, data != nil)
		}
		if ok && json.Valid(data) {
			var a, b any
			if json.Unmarshal(d, &a) != nil || json.Unmarshal(data, &b) != nil || !jsonEqual(a, b) {
				t.Fatalf("%q: data %s, want %s", out, d, data)
			}
		}
	})
}

// jsonEqual compares two decoded JSON values.
func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

package rdb

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestFunctionsRoundTrip: DecodeFunctions reads back what DumpFunctions
// wrote, short and compressible libraries alike, and a flipped byte or a
// cut payload is ErrPayload.
func TestFunctionsRoundTrip(t *testing.T) {
	for _, codes := range [][]string{
		nil,
		{"#!lua name=a\nredis.register_function('a', function() return 1 end)"},
		{"#!lua name=b\n" + strings.Repeat("-- compressible\n", 100) + "redis.register_function('b', function() return 2 end)", "#!lua name=c\nreturn"},
	} {
		p := DumpFunctions(codes)
		got, err := DecodeFunctions(p)
		if err != nil || !reflect.DeepEqual(got, codes) {
			t.Fatalf("DecodeFunctions: %q, %v; want %q", got, err, codes)
		}
		for i := range p {
			c := append([]byte(nil), p...)
			c[i] ^= 0x20
			if _, err := DecodeFunctions(c); !errors.Is(err, ErrPayload) {
				t.Fatalf("byte %d flipped: %v", i, err)
			}
			if _, err := DecodeFunctions(p[:i]); !errors.Is(err, ErrPayload) {
				t.Fatalf("cut at %d: %v", i, err)
			}
		}
	}
}

// FuzzDecodeFunctions: any payload decodes to libraries or an error,
// without a panic, and what decodes dumps back to a payload that decodes
// to the same libraries.
func FuzzDecodeFunctions(f *testing.F) {
	f.Add(DumpFunctions(nil))
	f.Add(DumpFunctions([]string{"#!lua name=a\nredis.register_function('a', function() return 1 end)"}))
	f.Add(DumpFunctions([]string{strings.Repeat("abc", 100)}))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, p []byte) {
		codes, err := DecodeFunctions(p)
		if err != nil {
			return
		}
		again, err := DecodeFunctions(DumpFunctions(codes))
		if err != nil || !reflect.DeepEqual(again, codes) {
			t.Fatalf("re-dumped %q: %q, %v", codes, again, err)
		}
	})
}

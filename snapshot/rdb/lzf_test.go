package rdb

import (
	"bytes"
	"strings"
	"testing"
)

// TestLZFRoundTrip compresses and decompresses inputs with long and short
// matches, far and near references and incompressible runs.
func TestLZFRoundTrip(t *testing.T) {
	noise := make([]byte, 5000)
	x := uint32(1)
	for i := range noise {
		x = x*1664525 + 1013904223
		noise[i] = byte(x >> 24)
	}
	for _, in := range [][]byte{
		[]byte(strings.Repeat("a", 10000)),
		[]byte(strings.Repeat("abcdefgh", 1000)),
		append(append(append([]byte{}, noise[:3000]...), noise[:3000]...), "tail"...),
		[]byte(strings.Repeat("the quick brown fox ", 300)),
	} {
		c := lzfCompress(nil, in, len(in))
		if c == nil {
			t.Fatalf("%d bytes did not compress", len(in))
		}
		out := make([]byte, len(in))
		if err := lzfDecompress(c, out); err != nil || !bytes.Equal(out, in) {
			t.Fatalf("round trip of %d bytes (%d compressed): %v", len(in), len(c), err)
		}
	}
	// A run of one byte uses the longest references: about 88 to 1.
	if c := lzfCompress(nil, bytes.Repeat([]byte{'a'}, 26400), 26400); len(c) > 26400/80 {
		t.Errorf("26400 equal bytes compressed to %d", len(c))
	}
	if c := lzfCompress(nil, noise, len(noise)-4); c != nil {
		t.Errorf("noise compressed to %d bytes", len(c))
	}
	// Truncated or wrong-length data is an error, never a panic.
	c := lzfCompress(nil, []byte(strings.Repeat("ab", 100)), 200)
	for i := 0; i < len(c); i++ {
		if err := lzfDecompress(c[:i], make([]byte, 200)); err == nil {
			t.Fatalf("cut at %d decompressed", i)
		}
	}
	if err := lzfDecompress(c, make([]byte, 199)); err == nil {
		t.Fatal("short output accepted")
	}
}

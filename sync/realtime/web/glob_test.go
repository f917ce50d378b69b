package web_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	recsync "github.com/recached/recached/sync"
)

// TestGlobMatchAgreesWithServer runs realtime-client.js's globMatch (the
// client routes deliveries of glob subscriptions with it) in Node over fixed
// and random patterns and names, and compares every answer with the
// server's matcher, so that the two cannot drift apart.
func TestGlobMatchAgreesWithServer(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node not found and CI is set")
		}
		t.Skip("node not found")
	}
	type pair struct{ P, S string }
	pairs := []pair{
		{"chat:*", "chat:lobby"}, {"chat:*", "chat"}, {"*", ""}, {"a?c", "abc"}, {"a?c", "ac"},
		{"[abc]x", "bx"}, {"[^abc]x", "bx"}, {"[a-c]", "b"}, {"[c-a]", "b"}, {`\*`, "*"}, {`\*`, "x"},
		{"a*b*c", "aXbYc"}, {"a*b*c", "aXbY"}, {"[", "["}, {"[a", "a"}, {"[]", "x"}, {"a\\", "a\\"},
		{"[\\]]", "]"}, {"**", "anything"}, {"?", ""}, {"[a-]", "-"}, {"h[^e]llo", "hallo"},
	}
	const alphabet = `ab*?[]^-\:`
	r := rand.New(rand.NewPCG(1, 2))
	word := func(n int, chars string) string {
		b := make([]byte, r.IntN(n))
		for i := range b {
			b[i] = chars[r.IntN(len(chars))]
		}
		return string(b)
	}
	for range 3000 {
		pairs = append(pairs, pair{word(7, alphabet), word(7, `ab:-]\[`)})
	}
	in, err := json.Marshal(pairs)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	script := `import { globMatch } from ` + jsString("file://"+filepath.Join(dir, "realtime-client.js")) + `;
let s = ''; process.stdin.on('data', (d) => s += d).on('end', () => {
  process.stdout.write(JSON.stringify(JSON.parse(s).map((p) => globMatch(p.P, p.S))));
});`
	cmd := exec.Command(node, "--input-type=module", "-e", script)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var got []bool
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(pairs) {
		t.Fatalf("node answered %.200s (%v)", out, err)
	}
	bad := 0
	for i, p := range pairs {
		if want := recsync.Match(p.P, p.S); got[i] != want {
			t.Errorf("globMatch(%q, %q) = %v, the server says %v", p.P, p.S, got[i], want)
			if bad++; bad > 20 {
				t.FailNow()
			}
		}
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

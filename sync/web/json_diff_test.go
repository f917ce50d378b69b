package web_test

// A differential test of recached-edge's json documents: random sequences
// of json effects (valid and not, fitting the document and not) go through
// the Go reference client's store, which applies them with the server's own
// code, and through recached-edge's Store in Node; after every effect the
// two must agree on whether it was understood, on the document's text and
// on its expiry time, and reads at random paths must give the same text or
// the same error.

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/sync/client"
)

// diffNow is the fixed clock of both stores, in Unix ms.
const diffNow = 1_700_000_000_000

// jsonGen makes random JSON texts, paths and effects from small pools, so
// that paths often meet the document.
type jsonGen struct{ r *rand.Rand }

var (
	genNames   = []string{"a", "a", "b", "b", "c", "a-b", "_x", "odd key", "é", "", "1", "__proto__", "x.y", `q"t`, "q's"}
	genNumbers = []string{"0", "-0", "1", "-1", "1.50", "1E+400", "9007199254740993", "-9223372036854775808", "9223372036854775808", "3.14e-10", "0.1", "12"}
	genStrings = []string{`"x"`, `""`, `"caf\u00e9"`, `"é"`, `"\ud83d\ude00"`, `"a\"b"`, `"\n\t"`, `"\/"`, `"\u0001"`, `"  "`}
	genBadJSON = []string{"{", "[1,]", "01", `"\x"`, `{"a":1,}`, "tru", `"\ud800"`, "", "1 2", "{'a':1}", "[", `{"a"}`}
	genBadPath = []string{"$..a", "$[01]", "$[-0]", "$[*]", "a", "$.", "$[", `$["a]`, "$[2147483648]", "$a", "$.a b", "..a", `$[?(@.a)]`}
)

func (g *jsonGen) pick(s []string) string { return s[g.r.IntN(len(s))] }

// space returns optional white space.
func (g *jsonGen) space() string {
	if g.r.IntN(6) == 0 {
		return g.pick([]string{" ", "\n", "\t ", "\r\n"})
	}
	return ""
}

// value returns a JSON text nested at most depth deep; nulls show up often
// inside objects, where merge patches give them meaning.
func (g *jsonGen) value(depth int) string {
	n := 6
	if depth > 0 {
		n = 8
	}
	switch g.r.IntN(n) {
	case 0:
		return "null"
	case 1:
		return g.pick([]string{"true", "false"})
	case 2:
		return g.pick(genNumbers)
	case 3, 4:
		return g.pick(genStrings)
	case 5:
		if depth == 0 {
			return g.pick(genNumbers)
		}
		fallthrough
	case 6:
		var b strings.Builder
		b.WriteString("[" + g.space())
		for i := range g.r.IntN(4) {
			if i > 0 {
				b.WriteString("," + g.space())
			}
			b.WriteString(g.value(depth - 1))
		}
		b.WriteString(g.space() + "]")
		return b.String()
	}
	var b strings.Builder
	b.WriteString("{" + g.space())
	for i := range g.r.IntN(4) {
		if i > 0 {
			b.WriteString(",")
		}
		name, _ := json.Marshal(g.pick(genNames))
		b.WriteString(string(name) + g.space() + ":" + g.space() + g.value(depth-1))
	}
	b.WriteString("}")
	return b.String()
}

// path returns a path of up to three segments in the forms the server
// accepts, or now and then one it refuses.
func (g *jsonGen) path() string {
	if g.r.IntN(25) == 0 {
		return g.pick(genBadPath)
	}
	n := g.r.IntN(4)
	if n == 0 {
		return g.pick([]string{"$", "$", "."})
	}
	var b strings.Builder
	legacy := g.r.IntN(8) == 0
	if !legacy {
		b.WriteString("$")
	}
	for i := range n {
		if g.r.IntN(3) == 0 {
			b.WriteString("[" + strconv.Itoa(g.r.IntN(7)-3) + "]")
			continue
		}
		name := g.pick(genNames)
		plain := name != "" && !strings.ContainsAny(name, ". \"'")
		switch {
		case plain && (legacy && i == 0 || g.r.IntN(2) == 0):
			b.WriteString("." + name)
		case g.r.IntN(2) == 0:
			q, _ := json.Marshal(name)
			b.WriteString("[" + string(q) + "]")
		default:
			b.WriteString("['" + strings.ReplaceAll(name, "'", `\'`) + "']")
		}
	}
	return b.String()
}

// effect returns one effect on key k.
func (g *jsonGen) effect() []string {
	val := func() string {
		if g.r.IntN(20) == 0 {
			return g.pick(genBadJSON)
		}
		return g.space() + g.value(3) + g.space()
	}
	switch r := g.r.IntN(40); {
	case r < 4:
		return []string{"JSET", "k", "$", val()}
	case r < 18:
		return []string{"JSET", "k", g.path(), val()}
	case r < 28:
		return []string{"JMERGE", "k", g.path(), val()}
	case r < 35:
		return []string{"JDEL", "k", g.path()}
	case r < 36:
		return []string{"JDEL", "k"}
	case r < 37:
		return []string{"PEXPIREAT", "k", strconv.Itoa(diffNow + 1000 + g.r.IntN(1000))}
	case r < 38:
		return []string{"SET", "k", "v"}
	case r < 39:
		return []string{"DEL", "k"}
	}
	return []string{"JSET", "k", g.path(), val(), "NX"} // not an effect the server pushes
}

// diffCase is one sequence, with what the Go store gave.
type diffCase struct {
	Effects [][]string `json:"effects"`
	Reads   [][]string `json:"reads"` // after each effect: paths to read
}

// diffStep is the state after one effect.
type diffStep struct {
	OK       bool       `json:"ok"`
	Value    string     `json:"value"` // the document's text, "<type>" for another type, "" when absent
	ExpireAt int64      `json:"expireAt"`
	Reads    []diffRead `json:"reads"`
}

// diffRead is one read at a path: the text, or nil, or the error's text.
type diffRead struct {
	Text *string `json:"text"`
	Err  string  `json:"err"`
}

// goSteps applies a case's effects to the Go reference client's store.
func goSteps(c diffCase) []diffStep {
	st := client.NewStore(func() time.Time { return time.UnixMilli(diffNow) })
	out := make([]diffStep, len(c.Effects))
	for i, e := range c.Effects {
		args := make([][]byte, len(e))
		for j, a := range e {
			args[j] = []byte(a)
		}
		_, ok := st.Apply(args)
		s := diffStep{OK: ok, Reads: []diffRead{}}
		if v, found := st.Get("k"); found {
			s.ExpireAt = v.ExpireAt
			if v.Type == client.TypeJSON {
				s.Value = string(v.JSON)
			} else {
				s.Value = "<" + v.Marker + ">"
			}
			if v.Type == client.TypeJSON {
				for _, p := range c.Reads[i] {
					text, found, err := st.JGet("k", p)
					var r diffRead
					switch {
					case err != nil:
						r.Err = err.Error()
					case found:
						t := string(text)
						r.Text = &t
					}
					s.Reads = append(s.Reads, r)
				}
			}
		}
		out[i] = s
	}
	return out
}

// nodeDiffScript applies the cases with recached-edge's Store and prints
// the steps as JSON.
const nodeDiffScript = `
import { readFileSync } from 'node:fs';
const { Store } = await import(process.argv[2]);
const cases = JSON.parse(readFileSync(process.argv[3], 'utf8'));
const out = cases.map((c) => {
  const st = new Store(() => ` + "1_700_000_000_000" + `);
  return c.effects.map((e, i) => {
    const ok = st.apply(e) !== null;
    const en = st.raw('k');
    const s = { ok, value: '', expireAt: 0, reads: [] };
    if (en) {
      s.expireAt = en.expireAt;
      s.value = en.type === 'json' ? en.value.text() : '<' + en.marker + '>';
      if (en.type === 'json') {
        for (const p of c.reads[i]) {
          try {
            s.reads.push({ text: st.jget('k', p), err: '' });
          } catch (err) {
            s.reads.push({ text: null, err: err.message.replace(/^ERR /, '') });
          }
        }
      }
    }
    return s;
  });
});
process.stdout.write(JSON.stringify(out));
`

func TestJSONEffectsMatchTheReferenceClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node not found and CI is set: run scripts/install-test-deps.sh")
		}
		t.Skip("node not found: run scripts/install-test-deps.sh")
	}
	g := &jsonGen{r: rand.New(rand.NewPCG(7, 2026))}
	const sequences, steps = 3000, 10
	cases := make([]diffCase, sequences)
	for i := range cases {
		c := diffCase{Effects: [][]string{{"JSET", "k", "$", g.value(3)}}, Reads: [][]string{nil}}
		for range steps {
			c.Effects = append(c.Effects, g.effect())
		}
		c.Reads = make([][]string, len(c.Effects))
		for j := range c.Reads {
			c.Reads[j] = []string{g.path(), g.path()}
		}
		cases[i] = c
	}
	dir := t.TempDir()
	input, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	casesFile := filepath.Join(dir, "cases.json")
	scriptFile := filepath.Join(dir, "diff.mjs")
	if err := os.WriteFile(casesFile, input, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(scriptFile, []byte(nodeDiffScript), 0o644); err != nil {
		t.Fatal(err)
	}
	module, err := filepath.Abs("recached-edge.js")
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(node, scriptFile, "file://"+module, casesFile)
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got [][]diffStep
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("node output: %v", err)
	}
	if len(got) != len(cases) {
		t.Fatalf("node returned %d sequences, want %d", len(got), len(cases))
	}
	failures, understood, reads := 0, 0, 0
	for i, c := range cases {
		want := goSteps(c)
		for j := range want {
			if want[j].OK {
				understood++
			}
			reads += len(want[j].Reads)
			w, _ := json.Marshal(want[j])
			h, _ := json.Marshal(got[i][j])
			if !bytes.Equal(w, h) {
				failures++
				if failures <= 5 {
					t.Errorf("sequence %d, step %d: %q\n  Go:   %s\n  edge: %s\n  effects so far: %q", i, j, c.Effects[j], w, h, c.Effects[:j+1])
				}
				break
			}
		}
	}
	if failures > 0 {
		t.Fatalf("%d of %d sequences differ", failures, len(cases))
	}
	t.Logf("%d sequences, %d effects (%d understood), %d reads: recached-edge agrees with the reference client", len(cases), len(cases)*(steps+1), understood, reads)
}

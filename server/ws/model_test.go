package ws_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
	rc "github.com/recached/recached/sync/client"
)

// model is a sync client's local store: it applies mutation pushes exactly
// as a client library would.
type model struct {
	t    *testing.T
	strs map[string]string
	hash map[string]map[string]string
	list map[string][]string
	set  map[string]map[string]bool
	zset map[string]map[string]float64
	json map[string]any // documents, as encoding/json decodes them
	// stream holds the streams, applied by the Go client's applier and
	// compared with the server's XINFO STREAM FULL.
	stream map[string]*rc.Stream
	exp    map[string]int64 // unix ms
}

func newModel(t *testing.T) *model {
	return &model{t: t, strs: map[string]string{}, hash: map[string]map[string]string{},
		list: map[string][]string{}, set: map[string]map[string]bool{},
		zset: map[string]map[string]float64{}, json: map[string]any{}, stream: map[string]*rc.Stream{},
		exp: map[string]int64{}}
}

func (m *model) del(k string) {
	delete(m.strs, k)
	delete(m.hash, k)
	delete(m.list, k)
	delete(m.set, k)
	delete(m.zset, k)
	delete(m.json, k)
	delete(m.stream, k)
	delete(m.exp, k)
}

// dropEmpty removes a container that became empty, as the server does.
func (m *model) dropEmpty(k string) {
	if h, ok := m.hash[k]; ok && len(h) == 0 {
		m.del(k)
	}
	if l, ok := m.list[k]; ok && len(l) == 0 {
		m.del(k)
	}
	if s, ok := m.set[k]; ok && len(s) == 0 {
		m.del(k)
	}
	if z, ok := m.zset[k]; ok && len(z) == 0 {
		m.del(k)
	}
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("bad integer %q in a push", s)
	}
	return n
}

// apply applies one mutation push.
func (m *model) apply(args []string) {
	t := m.t
	cmd, k := strings.ToUpper(args[0]), ""
	if len(args) > 1 {
		k = args[1]
	}
	switch cmd {
	case "SET":
		keepTTL := false
		var at int64 = -1
		for i := 3; i < len(args); i++ {
			switch strings.ToUpper(args[i]) {
			case "KEEPTTL":
				keepTTL = true
			case "PXAT":
				at = int64(atoi(t, args[i+1]))
				i++
			default:
				t.Fatalf("SET push with option %q", args[i])
			}
		}
		e, had := m.exp[k]
		m.del(k)
		m.strs[k] = args[2]
		if keepTTL && had {
			m.exp[k] = e
		}
		if at >= 0 {
			m.exp[k] = at
		}
	case "DEL":
		for _, x := range args[1:] {
			m.del(x)
		}
	case "FLUSHDB":
		*m = *newModel(t)
	case "PEXPIREAT":
		m.exp[k] = int64(atoi(t, args[2]))
	case "PERSIST":
		delete(m.exp, k)
	case "RENAME":
		dst := args[2]
		var s string
		var h map[string]string
		var l []string
		var st map[string]bool
		var z map[string]float64
		sOK := false
		if v, ok := m.strs[k]; ok {
			s, sOK = v, true
		}
		h, l, st, z = m.hash[k], m.list[k], m.set[k], m.zset[k]
		doc, isDoc := m.json[k]
		xs := m.stream[k]
		e, hadExp := m.exp[k]
		m.del(k)
		m.del(dst)
		switch {
		case sOK:
			m.strs[dst] = s
		case h != nil:
			m.hash[dst] = h
		case l != nil:
			m.list[dst] = l
		case st != nil:
			m.set[dst] = st
		case z != nil:
			m.zset[dst] = z
		case isDoc:
			m.json[dst] = doc
		case xs != nil:
			m.stream[dst] = xs
		}
		if hadExp {
			m.exp[dst] = e
		}
	case "HSET":
		if m.hash[k] == nil {
			m.hash[k] = map[string]string{}
		}
		for i := 2; i+1 < len(args); i += 2 {
			m.hash[k][args[i]] = args[i+1]
		}
	case "HDEL":
		for _, f := range args[2:] {
			delete(m.hash[k], f)
		}
		m.dropEmpty(k)
	case "RPUSH", "LPUSH":
		for _, v := range args[2:] {
			if cmd == "RPUSH" {
				m.list[k] = append(m.list[k], v)
			} else {
				m.list[k] = append([]string{v}, m.list[k]...)
			}
		}
	case "LPOP", "RPOP":
		n := 1
		if len(args) > 2 {
			n = atoi(t, args[2])
		}
		l := m.list[k]
		n = min(n, len(l))
		if cmd == "LPOP" {
			m.list[k] = l[n:]
		} else {
			m.list[k] = l[:len(l)-n]
		}
		m.dropEmpty(k)
	case "LSET":
		m.list[k][atoi(t, args[2])] = args[3]
	case "LTRIM":
		l := m.list[k]
		a, b := atoi(t, args[2]), atoi(t, args[3])
		if a < 0 {
			a = max(len(l)+a, 0)
		}
		if b < 0 {
			b = len(l) + b
		}
		b = min(b, len(l)-1)
		if a > b {
			m.list[k] = nil
		} else {
			m.list[k] = l[a : b+1]
		}
		m.dropEmpty(k)
	case "LREM":
		n, v := atoi(t, args[2]), args[3]
		l := m.list[k]
		var out []string
		removed := 0
		if n >= 0 {
			for _, x := range l {
				if x == v && (n == 0 || removed < n) {
					removed++
					continue
				}
				out = append(out, x)
			}
		} else {
			for i := len(l) - 1; i >= 0; i-- {
				if l[i] == v && removed < -n {
					removed++
					continue
				}
				out = append([]string{l[i]}, out...)
			}
		}
		m.list[k] = out
		m.dropEmpty(k)
	case "LINSERT":
		l := m.list[k]
		i := slices.Index(l, args[4])
		if i >= 0 {
			if strings.EqualFold(args[2], "after") {
				i++
			}
			m.list[k] = slices.Insert(l, i, args[5])
		}
	case "SADD":
		if m.set[k] == nil {
			m.set[k] = map[string]bool{}
		}
		for _, v := range args[2:] {
			m.set[k][v] = true
		}
	case "SREM":
		for _, v := range args[2:] {
			delete(m.set[k], v)
		}
		m.dropEmpty(k)
	case "ZADD":
		if m.zset[k] == nil {
			m.zset[k] = map[string]float64{}
		}
		for i := 2; i+1 < len(args); i += 2 {
			f, err := strconv.ParseFloat(args[i], 64)
			if err != nil {
				t.Fatalf("ZADD push with score %q", args[i])
			}
			m.zset[k][args[i+1]] = f
		}
	case "ZREM":
		for _, v := range args[2:] {
			delete(m.zset[k], v)
		}
		m.dropEmpty(k)
	case "JSET", "JMERGE", "JDEL":
		if len(args) > 2 && args[2] != "$" {
			t.Fatalf("the test only writes whole documents, got %q", args)
		}
		if cmd == "JDEL" {
			m.del(k)
			return
		}
		var v any
		if err := json.Unmarshal([]byte(args[3]), &v); err != nil {
			t.Fatalf("push %q: %v", args, err)
		}
		if cmd == "JMERGE" {
			v = mergePatch(m.json[k], v)
		}
		if v == nil {
			m.del(k)
			return
		}
		e, had := m.exp[k]
		if _, isDoc := m.json[k]; !isDoc {
			m.del(k)
			had = false
		}
		m.json[k] = v
		if had {
			m.exp[k] = e
		}
	case "XADD", "XTRIM", "XDEL", "XSETID", "XACK", "XCLAIM", "XGROUP":
		if cmd == "XGROUP" {
			k = args[2]
		}
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		cur := m.stream[k]
		if cur == nil && m.state(k, 0, false) != "" {
			t.Fatalf("stream effect %q on a key of another type: %s", args, m.state(k, 0, false))
		}
		st, err := rc.ApplyStreamEffect(cur, b, time.Now().UnixMilli())
		if err != nil {
			t.Fatalf("stream effect %q: %v", args, err)
		}
		if st != nil {
			m.stream[k] = st
		}
	default:
		t.Fatalf("the test's applier does not know the pushed effect %q", args)
	}
}

// describeStream renders a stream in the comparison format: counters,
// entries, groups, consumers and pending entries.
func describeStream(s *rc.Stream) string {
	var b strings.Builder
	fmt.Fprintf(&b, "stream len=%d last=%s maxdel=%s added=%d", s.Len(), s.LastID, s.MaxDeletedID, s.EntriesAdded)
	for _, e := range s.Entries {
		fmt.Fprintf(&b, " %s%q", e.ID, e.Fields)
	}
	for _, g := range s.Groups {
		fmt.Fprintf(&b, " group %q last=%s read=%d consumers=%q", g.Name, g.LastID, g.EntriesRead, g.Consumers)
		for _, p := range g.Pending {
			fmt.Fprintf(&b, " nack %s %q count=%d at=%d", p.ID, p.Consumer, p.DeliveryCount, p.DeliveryTime)
		}
	}
	return b.String()
}

// xinfoStream reads key's stream through XINFO STREAM key FULL COUNT 0.
func xinfoStream(t *testing.T, c *servertest.Client, k string) *rc.Stream {
	t.Helper()
	rep := tcpDo(t, c, "XINFO", "STREAM", k, "FULL", "COUNT", "0")
	v, _, err := resp.ParseValue([]byte(rep))
	if err != nil || v.Kind != '*' {
		t.Fatalf("XINFO STREAM %s FULL = %q (%v)", k, rep, err)
	}
	field := func(v resp.Value) map[string]resp.Value {
		m := map[string]resp.Value{}
		for i := 0; i+1 < len(v.Elems); i += 2 {
			m[v.Elems[i].Text()] = v.Elems[i+1]
		}
		return m
	}
	id := func(v resp.Value) rc.StreamID {
		x, err := rc.ParseStreamID(v.Text())
		if err != nil {
			t.Fatalf("XINFO id %q", v.Text())
		}
		return x
	}
	m := field(v)
	s := &rc.Stream{LastID: id(m["last-generated-id"]), MaxDeletedID: id(m["max-deleted-entry-id"]),
		EntriesAdded: uint64(m["entries-added"].Int)}
	for _, e := range m["entries"].Elems {
		var fv [][]byte
		for _, f := range e.Elems[1].Elems {
			fv = append(fv, f.Str)
		}
		s.Entries = append(s.Entries, rc.StreamEntry{ID: id(e.Elems[0]), Fields: fv})
	}
	for _, gv := range m["groups"].Elems {
		gm := field(gv)
		g := &rc.StreamGroup{Name: gm["name"].Text(), LastID: id(gm["last-delivered-id"]), EntriesRead: -1}
		if r := gm["entries-read"]; !r.Null {
			g.EntriesRead = r.Int
		}
		for _, p := range gm["pending"].Elems {
			g.Pending = append(g.Pending, rc.StreamPending{ID: id(p.Elems[0]), Consumer: p.Elems[1].Text(),
				DeliveryTime: p.Elems[2].Int, DeliveryCount: uint64(p.Elems[3].Int)})
		}
		for _, cv := range gm["consumers"].Elems {
			g.Consumers = append(g.Consumers, field(cv)["name"].Text())
		}
		s.Groups = append(s.Groups, g)
	}
	return s
}

// mergePatch applies an RFC 7386 merge patch to target.
func mergePatch(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
		} else {
			tm[k] = mergePatch(tm[k], v)
		}
	}
	return tm
}

// canonicalJSON re-encodes a decoded document with sorted object keys.
func canonicalJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// state renders the model's key k as the comparison format of
// serverState, "" when absent or expired at now.
func (m *model) state(k string, now int64, withExp bool) string {
	if at, ok := m.exp[k]; ok && at <= now {
		return ""
	}
	var body string
	switch {
	case m.strs[k] != "" || hasKey(m.strs, k):
		body = "string " + strconv.Quote(m.strs[k])
	case m.hash[k] != nil:
		body = "hash " + sortedPairs(m.hash[k])
	case m.list[k] != nil:
		body = "list " + fmt.Sprintf("%q", m.list[k])
	case m.set[k] != nil:
		body = "set " + fmt.Sprintf("%q", slices.Sorted(maps.Keys(m.set[k])))
	case m.zset[k] != nil:
		z := map[string]string{}
		for mem, sc := range m.zset[k] {
			z[mem] = strconv.FormatFloat(sc, 'g', 17, 64)
		}
		body = "zset " + sortedPairs(z)
	case hasKey(m.json, k):
		body = "json " + canonicalJSON(m.t, m.json[k])
	case m.stream[k] != nil:
		body = describeStream(m.stream[k])
	default:
		return ""
	}
	if at, ok := m.exp[k]; ok && withExp {
		body += " exp " + strconv.FormatInt(at, 10)
	}
	return body
}

func hasKey[V any](m map[string]V, k string) bool { _, ok := m[k]; return ok }

func sortedPairs(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%q=%q ", k, m[k])
	}
	return b.String()
}

// parseStrings parses a flat RESP array of bulk strings (or nil bulks).
func parseStrings(t *testing.T, rep []byte) []string {
	els, err := servertest.Elements(rep)
	if err != nil {
		t.Fatalf("parse %q: %v", rep, err)
	}
	out := make([]string, 0, len(els))
	for _, e := range els {
		s := string(e)
		switch s[0] {
		case '$':
			i := strings.Index(s, "\r\n")
			out = append(out, s[i+2:len(s)-2])
		case '+', ':':
			out = append(out, s[1:len(s)-2])
		default:
			t.Fatalf("unexpected element %q", s)
		}
	}
	return out
}

// serverState reads key k through c in the model's comparison format.
func serverState(t *testing.T, c *servertest.Client, k string, withExp bool) string {
	typ := strings.TrimSpace(tcpDo(t, c, "TYPE", k))[1:]
	var body string
	switch typ {
	case "none":
		return ""
	case "string":
		r := parseStrings(t, []byte("*1\r\n"+tcpDo(t, c, "GET", k)))
		body = "string " + strconv.Quote(r[0])
	case "hash":
		kv := parseStrings(t, []byte(tcpDo(t, c, "HGETALL", k)))
		h := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		body = "hash " + sortedPairs(h)
	case "list":
		body = "list " + fmt.Sprintf("%q", parseStrings(t, []byte(tcpDo(t, c, "LRANGE", k, "0", "-1"))))
	case "set":
		s := parseStrings(t, []byte(tcpDo(t, c, "SMEMBERS", k)))
		sort.Strings(s)
		body = "set " + fmt.Sprintf("%q", s)
	case "zset":
		kv := parseStrings(t, []byte(tcpDo(t, c, "ZRANGE", k, "0", "-1", "WITHSCORES")))
		z := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			f, _ := strconv.ParseFloat(kv[i+1], 64)
			z[kv[i]] = strconv.FormatFloat(f, 'g', 17, 64)
		}
		body = "zset " + sortedPairs(z)
	case "json":
		text := parseStrings(t, []byte("*1\r\n"+tcpDo(t, c, "JGET", k)))[0]
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatalf("JGET %s = %q: %v", k, text, err)
		}
		body = "json " + canonicalJSON(t, v)
	case "stream":
		body = describeStream(xinfoStream(t, c, k))
	default:
		t.Fatalf("TYPE %s = %q", k, typ)
	}
	if at := strings.TrimSpace(tcpDo(t, c, "PEXPIRETIME", k)); at != ":-1" && withExp {
		body += " exp " + at[1:]
	}
	return body
}

// drain reads frames until the reply to a PING barrier, applying every
// mutation push to m.
func (c *client) drain(m *model) {
	c.t.Helper()
	c.send("PING", "barrier")
	for {
		f := c.read()
		if f == "$7\r\nbarrier\r\n" {
			return
		}
		if strings.HasPrefix(f, "*3\r\n$9\r\nkeychange\r\n") {
			continue // a live query's notification; the pushes carry the data
		}
		if f[0] != '>' {
			c.t.Fatalf("unexpected frame %q", f)
		}
		m.apply(parseStrings(c.t, []byte("*"+f[1:])))
	}
}

// qsub registers a live query and loads its qstate into m; the hydration
// pushes that follow are applied by the next drain.
func (c *client) qsub(m *model, pattern string) {
	c.t.Helper()
	f := c.do("QSUB", pattern)
	els, err := servertest.Elements([]byte(f))
	if err != nil || len(els) < 2 || string(els[0]) != bulk("qstate") {
		c.t.Fatalf("QSUB reply %q", f)
	}
	for i := 2; i+1 < len(els); i += 2 {
		k := parseStrings(c.t, []byte("*1\r\n"+string(els[i])))[0]
		if v := string(els[i+1]); v[0] == '$' {
			m.strs[k] = parseStrings(c.t, []byte("*1\r\n"+v))[0]
		}
	}
}

// TestModel is the model test: a WebSocket client SYNCed on "m:*" applies
// every mutation push to a local copy while TCP and WebSocket clients write
// at random over every data type, with expiry and renames across the scope
// boundary; in the end its copy equals the server's state for every key in
// scope. A second client joins midway with a live query (QSUB): its qstate,
// hydration pushes and later pushes must build the same values.
func TestModel(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { testModel(t, seed) })
	}
}

func testModel(t *testing.T, seed uint64) {
	e := start(t, server.Config{})
	sub := e.dial(t)
	sub.expect("+OK\r\n", "SYNC", "m:*")
	local := newModel(t)
	tc := e.tcpClient(t)
	wsw := e.dial(t)
	have := func(name string) bool { return e.srv.Table().Lookup([]byte(name)) != nil }

	r := rand.New(rand.NewPCG(seed, 11))
	key := func() string {
		if r.IntN(4) == 0 {
			return "o:" + strconv.Itoa(r.IntN(4))
		}
		return "m:" + strconv.Itoa(r.IntN(12))
	}
	val := func() string { return strconv.Itoa(r.IntN(5)) }
	scalar := func() string {
		switch r.IntN(3) {
		case 0:
			return val()
		case 1:
			return strconv.Quote("s" + val())
		}
		return `{"n":` + val() + `}`
	}
	doc := func() string { return `{"a":` + scalar() + `,"b":[` + val() + `]}` }
	patch := func() string {
		switch r.IntN(6) {
		case 0:
			return "null"
		case 1:
			return scalar()
		}
		return `{"a":null,"c":` + scalar() + `}`
	}
	type gen struct {
		cmd string
		mk  func() []string
	}
	gens := []gen{
		{"set", func() []string { return []string{"SET", key(), val()} }},
		{"set", func() []string { return []string{"SET", key(), val(), "PX", strconv.Itoa(1 + r.IntN(30))} }},
		{"set", func() []string { return []string{"SET", key(), val(), "EX", "3600"} }},
		{"incr", func() []string { return []string{"INCR", key()} }},
		{"append", func() []string { return []string{"APPEND", key(), val()} }},
		{"del", func() []string { return []string{"DEL", key(), key()} }},
		{"expire", func() []string { return []string{"EXPIRE", key(), "7200"} }},
		{"pexpire", func() []string { return []string{"PEXPIRE", key(), strconv.Itoa(1 + r.IntN(20))} }},
		{"persist", func() []string { return []string{"PERSIST", key()} }},
		{"rename", func() []string { return []string{"RENAME", key(), key()} }},
		{"copy", func() []string { return []string{"COPY", key(), key(), "REPLACE"} }},
		{"hset", func() []string { return []string{"HSET", key(), "f" + val(), val(), "g", val()} }},
		{"hdel", func() []string { return []string{"HDEL", key(), "f" + val()} }},
		{"hincrby", func() []string { return []string{"HINCRBY", key(), "n", "2"} }},
		{"rpush", func() []string { return []string{"RPUSH", key(), val(), val()} }},
		{"lpush", func() []string { return []string{"LPUSH", key(), val()} }},
		{"lpop", func() []string { return []string{"LPOP", key()} }},
		{"rpop", func() []string { return []string{"RPOP", key(), "2"} }},
		{"lrem", func() []string { return []string{"LREM", key(), "1", val()} }},
		{"ltrim", func() []string { return []string{"LTRIM", key(), "0", "3"} }},
		{"sadd", func() []string { return []string{"SADD", key(), val(), val()} }},
		{"srem", func() []string { return []string{"SREM", key(), val()} }},
		{"spop", func() []string { return []string{"SPOP", key()} }},
		{"zadd", func() []string { return []string{"ZADD", key(), val(), "z" + val()} }},
		{"zincrby", func() []string { return []string{"ZINCRBY", key(), "1.5", "z" + val()} }},
		{"zrem", func() []string { return []string{"ZREM", key(), "z" + val()} }},
		{"jset", func() []string { return []string{"JSET", key(), "$", doc()} }},
		{"jmerge", func() []string { return []string{"JMERGE", key(), "$", patch()} }},
		{"jdel", func() []string { return []string{"JDEL", key()} }},
	}
	// Streams: explicit ids from a counter (ms) so that XDEL, XACK and
	// XCLAIM hit entries; two groups, three consumers.
	seq := 0
	sid := func() string { return strconv.Itoa(r.IntN(seq+2)) + "-" + strconv.Itoa(r.IntN(2)) }
	group := func() string { return []string{"g1", "g2"}[r.IntN(2)] }
	consumer := func() string { return []string{"alice", "bob", "carol"}[r.IntN(3)] }
	gens = append(gens, []gen{
		{"xadd", func() []string { seq++; return []string{"XADD", key(), strconv.Itoa(seq) + "-*", "f", val()} }},
		{"xadd", func() []string {
			seq++
			return []string{"XADD", key(), "MAXLEN", "~", "3", strconv.Itoa(seq) + "-*", "f", val(), "g", val()}
		}},
		{"xadd", func() []string {
			seq++
			return []string{"XADD", key(), "MINID", sid(), strconv.Itoa(seq) + "-*", "f", val()}
		}},
		{"xtrim", func() []string { return []string{"XTRIM", key(), "MAXLEN", strconv.Itoa(r.IntN(4))} }},
		{"xdel", func() []string { return []string{"XDEL", key(), sid(), sid()} }},
		{"xsetid", func() []string {
			return []string{"XSETID", key(), strconv.Itoa(seq+1) + "-0", "ENTRIESADDED", strconv.Itoa(100 + seq), "MAXDELETEDID", "1-0"}
		}},
		{"xgroup", func() []string {
			return []string{"XGROUP", "CREATE", key(), group(), []string{"0", "$"}[r.IntN(2)], "MKSTREAM"}
		}},
		{"xgroup", func() []string { return []string{"XGROUP", "SETID", key(), group(), sid()} }},
		{"xgroup", func() []string {
			return []string{"XGROUP", []string{"CREATECONSUMER", "DELCONSUMER", "DESTROY"}[r.IntN(3)], key(), group(), consumer()}[:4+r.IntN(2)]
		}},
		{"xreadgroup", func() []string {
			return []string{"XREADGROUP", "GROUP", group(), consumer(), "COUNT", "2", "STREAMS", key(), []string{">", ">", "0"}[r.IntN(3)]}
		}},
		{"xreadgroup", func() []string {
			return []string{"XREADGROUP", "GROUP", group(), consumer(), "NOACK", "STREAMS", key(), ">"}
		}},
		{"xack", func() []string { return []string{"XACK", key(), group(), sid(), sid()} }},
		{"xclaim", func() []string {
			return []string{"XCLAIM", key(), group(), consumer(), "0", sid(), sid(), []string{"JUSTID", "FORCE", "IDLE"}[r.IntN(3)], "5"}
		}},
		{"xautoclaim", func() []string { return []string{"XAUTOCLAIM", key(), group(), consumer(), "0", "0", "COUNT", "2"} }},
	}...)
	var usable []gen
	var skipped []string
	for _, g := range gens {
		if have(g.cmd) {
			usable = append(usable, g)
		} else if !slices.Contains(skipped, g.cmd) {
			skipped = append(skipped, g.cmd)
		}
	}
	if len(skipped) > 0 {
		t.Logf("commands not implemented yet, left out: %v", skipped)
	}
	qc := e.dial(t)
	qlocal := newModel(t)
	const ops = 3000
	for i := 0; i < ops; i++ {
		if i == ops/3 {
			qc.qsub(qlocal, "m:*")
		}
		args := usable[r.IntN(len(usable))].mk()
		if i%3 == 0 {
			wsw.do(args...)
		} else {
			tcpDo(t, tc, args...)
		}
		if i%500 == 499 {
			sub.drain(local)
			qc.drain(qlocal)
		}
	}
	time.Sleep(100 * time.Millisecond) // let every short time to live pass
	for i := 0; i < 12; i++ {
		tcpDo(t, tc, "EXISTS", "m:"+strconv.Itoa(i)) // expire what is due
	}
	sub.drain(local)
	qc.drain(qlocal)
	now := time.Now().UnixMilli()
	keys := map[string]bool{}
	for i := 0; i < 12; i++ {
		keys["m:"+strconv.Itoa(i)] = true
	}
	compared := 0
	for k := range keys {
		want := serverState(t, tc, k, true)
		if got := local.state(k, now, true); got != want {
			t.Errorf("key %s: local copy %q, server %q", k, got, want)
		}
		// The live query's copy: QSUB follows its qstate with PEXPIREAT pushes.
		if got, want := qlocal.state(k, now, true), serverState(t, tc, k, true); got != want {
			t.Errorf("key %s: live query copy %q, server %q", k, got, want)
		}
		if want != "" {
			compared++
		}
	}
	// Out-of-scope keys never reached the copy.
	for _, ks := range [][]string{slices.Collect(maps.Keys(local.strs)), slices.Collect(maps.Keys(local.hash)),
		slices.Collect(maps.Keys(local.list)), slices.Collect(maps.Keys(local.set)), slices.Collect(maps.Keys(local.zset)),
		slices.Collect(maps.Keys(local.stream))} {
		for _, k := range ks {
			if !strings.HasPrefix(k, "m:") {
				t.Errorf("out-of-scope key %s in the local copy", k)
			}
		}
	}
	t.Logf("%d ops, %d keys in scope compared equal (%d present)", ops, len(keys), compared)
}

// TestModelStreams is the model test over streams alone, so that streams
// live long enough to gather groups, consumers and pending entries: a
// SYNCed WebSocket client and a live query started midway apply the pushes
// of random XADD/XTRIM/XDEL/XSETID/XGROUP/XREADGROUP/XACK/XCLAIM/XAUTOCLAIM
// traffic (with RENAME, COPY and DEL across keys) and, every 50 writes,
// their copies must equal the server's XINFO STREAM FULL: entries, last
// id, entries added, largest deleted id, groups with their read counters,
// consumers, and pending entries with delivery times and counts.
func TestModelStreams(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { testModelStreams(t, seed) })
	}
}

func testModelStreams(t *testing.T, seed uint64) {
	e := start(t, server.Config{})
	tc := e.tcpClient(t)
	tcpDo(t, tc, "CONFIG", "SET", "stream-node-max-entries", "3")
	sub := e.dial(t)
	sub.expect("+OK\r\n", "SYNC", "m:*")
	local := newModel(t)
	wsw := e.dial(t)
	qc := e.dial(t)
	qlocal := newModel(t)
	r := rand.New(rand.NewPCG(seed, 15))
	key := func() string {
		if r.IntN(5) == 0 {
			return "o:" + strconv.Itoa(r.IntN(2))
		}
		return "m:" + strconv.Itoa(r.IntN(3))
	}
	seq := 0
	sid := func() string { return strconv.Itoa(r.IntN(seq+2)) + "-" + strconv.Itoa(r.IntN(2)) }
	group := func() string { return []string{"g1", "g2"}[r.IntN(2)] }
	consumer := func() string { return []string{"alice", "bob", "carol"}[r.IntN(3)] }
	gens := []func() []string{
		func() []string {
			seq++
			return []string{"XADD", key(), strconv.Itoa(seq) + "-*", "f", strconv.Itoa(seq)}
		},
		func() []string { seq++; return []string{"XADD", key(), strconv.Itoa(seq) + "-*", "a", "1", "b", "2"} },
		func() []string {
			seq++
			return []string{"XADD", key(), "MAXLEN", "~", "4", strconv.Itoa(seq) + "-*", "f", "v"}
		},
		func() []string {
			seq++
			return []string{"XADD", key(), "MINID", sid(), strconv.Itoa(seq) + "-*", "f", "v"}
		},
		func() []string { return []string{"XADD", key(), "NOMKSTREAM", "*", "f", "late"} },
		func() []string {
			return []string{"XTRIM", key(), "MAXLEN", []string{"=", "~"}[r.IntN(2)], strconv.Itoa(r.IntN(5))}
		},
		func() []string { return []string{"XTRIM", key(), "MINID", sid()} },
		func() []string { return []string{"XDEL", key(), sid(), sid()} },
		func() []string {
			return []string{"XSETID", key(), strconv.Itoa(seq+1) + "-0", "ENTRIESADDED", strconv.Itoa(100 + seq), "MAXDELETEDID", "1-0"}
		},
		func() []string {
			return []string{"XGROUP", "CREATE", key(), group(), []string{"0", "$", sid()}[r.IntN(3)], "MKSTREAM"}
		},
		func() []string {
			return []string{"XGROUP", "SETID", key(), group(), []string{"0", "$", sid()}[r.IntN(3)]}
		},
		func() []string { return []string{"XGROUP", "CREATECONSUMER", key(), group(), consumer()} },
		func() []string {
			if r.IntN(4) == 0 {
				return []string{"XGROUP", "DELCONSUMER", key(), group(), consumer()}
			}
			return []string{"XREADGROUP", "GROUP", group(), consumer(), "COUNT", "2", "STREAMS", key(), ">"}
		},
		func() []string {
			if r.IntN(4) == 0 {
				return []string{"XGROUP", "DESTROY", key(), group()}
			}
			return []string{"XREADGROUP", "GROUP", group(), consumer(), "COUNT", "2", "STREAMS", key(), ">"}
		},
		func() []string {
			return []string{"XREADGROUP", "GROUP", group(), consumer(), "COUNT", strconv.Itoa(1 + r.IntN(3)), "STREAMS", key(), ">"}
		},
		func() []string { return []string{"XREADGROUP", "GROUP", group(), consumer(), "STREAMS", key(), "0"} },
		func() []string {
			return []string{"XREADGROUP", "GROUP", group(), consumer(), "NOACK", "STREAMS", key(), ">"}
		},
		func() []string { return []string{"XACK", key(), group(), sid(), sid()} },
		func() []string {
			return []string{"XCLAIM", key(), group(), consumer(), "0", sid(), sid(), "RETRYCOUNT", "4"}
		},
		func() []string {
			return []string{"XCLAIM", key(), group(), consumer(), "0", sid(), "FORCE", "JUSTID", "LASTID", sid()}
		},
		func() []string { return []string{"XAUTOCLAIM", key(), group(), consumer(), "0", "0", "COUNT", "2"} },
		func() []string { return []string{"RENAME", key(), key()} },
		func() []string { return []string{"COPY", key(), key(), "REPLACE"} },
		func() []string {
			if r.IntN(4) == 0 {
				return []string{"DEL", key()}
			}
			return []string{"XREADGROUP", "GROUP", group(), consumer(), "COUNT", "2", "STREAMS", key(), ">"}
		},
		func() []string { return []string{"PEXPIRE", key(), "600000"} },
	}
	const ops = 1500
	compared := 0
	for i := 0; i < ops; i++ {
		if i == ops/3 {
			qc.qsub(qlocal, "m:*")
		}
		args := gens[r.IntN(len(gens))]()
		if i%3 == 0 {
			wsw.do(args...)
		} else {
			tcpDo(t, tc, args...)
		}
		if i%50 != 49 {
			continue
		}
		sub.drain(local)
		qc.drain(qlocal)
		now := time.Now().UnixMilli()
		for j := 0; j < 3; j++ {
			k := "m:" + strconv.Itoa(j)
			want := serverState(t, tc, k, true)
			if got := local.state(k, now, true); got != want {
				t.Fatalf("after op %d %q, key %s:\nlocal copy %s\nserver     %s", i, args, k, got, want)
			}
			if i >= ops/3 {
				if got := qlocal.state(k, now, true); got != want {
					t.Fatalf("after op %d %q, key %s:\nlive query copy %s\nserver          %s", i, args, k, got, want)
				}
			}
			if strings.Contains(want, "nack") {
				compared++
			}
		}
	}
	if compared == 0 {
		t.Fatal("no stream with pending entries was ever compared")
	}
	t.Logf("%d ops, %d comparisons of streams with pending entries", ops, compared)
}

// TestStreamQSubHydration checks the exact pushes that follow a qstate for
// a stream with groups, consumers and pending entries, one of which lost
// its entry to XDEL: a placeholder entry lets XCLAIM recreate it, XTRIM
// removes the placeholder, XSETID restores the counters.
func TestStreamQSubHydration(t *testing.T) {
	e := start(t, server.Config{})
	tc := e.tcpClient(t)
	for _, c := range [][]string{
		{"XADD", "y:x", "1-1", "f", "v"}, {"XADD", "y:x", "2-1", "a", "b"}, {"XADD", "y:x", "3-1", "f", "w"},
		{"XGROUP", "CREATE", "y:x", "g", "0", "ENTRIESREAD", "0"},
		{"XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "y:x", ">"},
		{"XCLAIM", "y:x", "g", "bob", "0", "2-1", "TIME", "1700000000000", "RETRYCOUNT", "3", "JUSTID"},
		{"XCLAIM", "y:x", "g", "alice", "0", "1-1", "TIME", "1700000000001", "RETRYCOUNT", "1", "JUSTID"},
		{"XGROUP", "CREATECONSUMER", "y:x", "g", "carol"},
		{"XGROUP", "CREATE", "y:x", "h", "$"},
		{"XDEL", "y:x", "1-1"},
		{"PEXPIREAT", "y:x", "99999999999999"},
		{"XGROUP", "CREATE", "y:empty", "g", "$", "MKSTREAM"},
	} {
		if rep := tcpDo(t, tc, c...); rep[0] == '-' {
			t.Fatalf("%q: %s", c, rep)
		}
	}
	c := e.dial(t)
	c.expect("*6\r\n"+bulk("qstate")+bulk("y:*")+bulk("y:empty")+"+stream\r\n"+bulk("y:x")+"+stream\r\n", "QSUB", "y:*")
	for _, w := range []string{
		push("DEL", "y:empty"),
		push("XADD", "y:empty", "MAXLEN", "=", "0", "0-1", "x", "x"),
		push("XGROUP", "CREATE", "y:empty", "g", "0-0", "ENTRIESREAD", "-1"),
		push("XSETID", "y:empty", "0-0", "ENTRIESADDED", "0"),
		push("DEL", "y:x"),
		push("XADD", "y:x", "1-1", "", ""),
		push("XADD", "y:x", "2-1", "a", "b"),
		push("XADD", "y:x", "3-1", "f", "w"),
		push("XGROUP", "CREATE", "y:x", "g", "2-1", "ENTRIESREAD", "2"),
		push("XGROUP", "CREATECONSUMER", "y:x", "g", "alice"),
		push("XGROUP", "CREATECONSUMER", "y:x", "g", "bob"),
		push("XGROUP", "CREATECONSUMER", "y:x", "g", "carol"),
		push("XCLAIM", "y:x", "g", "alice", "0", "1-1", "TIME", "1700000000001", "RETRYCOUNT", "1", "FORCE", "JUSTID"),
		push("XCLAIM", "y:x", "g", "bob", "0", "2-1", "TIME", "1700000000000", "RETRYCOUNT", "3", "FORCE", "JUSTID"),
		push("XGROUP", "CREATE", "y:x", "h", "3-1", "ENTRIESREAD", "-1"),
		push("XTRIM", "y:x", "MINID", "=", "2-1"),
		push("XSETID", "y:x", "3-1", "ENTRIESADDED", "3", "MAXDELETEDID", "1-1"),
		push("PEXPIREAT", "y:x", "99999999999999"),
	} {
		if got := c.read(); got != w {
			t.Fatalf("got %q, want %q", got, w)
		}
	}
	c.noFrame()
	// Applied by a replica, the pushes rebuild the same streams.
	q := e.dial(t)
	m := newModel(t)
	q.qsub(m, "y:*")
	q.drain(m)
	for _, k := range []string{"y:x", "y:empty"} {
		if got, want := m.state(k, time.Now().UnixMilli(), true), serverState(t, tc, k, true); got != want {
			t.Errorf("%s: replica %s, server %s", k, got, want)
		}
	}
}

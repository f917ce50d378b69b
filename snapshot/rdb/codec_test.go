package rdb_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/recached/recached/server/keyspace"
	"github.com/recached/recached/snapshot/rdb"
)

func TestCRC64(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
	}{
		{"", 0},
		{"123456789", 0xe9c6d914c4b8d9ca},
		{"This is a test of the emergency broadcast system.", 0},
	} {
		got := rdb.CRC64(0, []byte(c.in))
		if c.want == 0 && c.in != "" {
			// The same bytes in two pieces give the same checksum.
			c.want = rdb.CRC64(rdb.CRC64(0, []byte(c.in[:13])), []byte(c.in[13:]))
		}
		if got != c.want {
			t.Errorf("crc64(%q) = %x, want %x", c.in, got, c.want)
		}
	}
}

// Builders of the old encodings, written from the format descriptions, so
// that files of Redis 2.x to 6.x can be made here.

func rlen(n int) []byte {
	switch {
	case n < 64:
		return []byte{byte(n)}
	case n < 16384:
		return []byte{byte(n>>8) | 0x40, byte(n)}
	}
	return binary.BigEndian.AppendUint32([]byte{0x80}, uint32(n))
}

func rstr(s string) []byte { return append(rlen(len(s)), s...) }

// ziplist encodes elements as a ziplist, integers in the smallest encoding.
func ziplist(elems ...string) []byte {
	var body []byte
	prev := 0
	last := 10
	for _, e := range elems {
		var ent []byte
		if prev < 254 {
			ent = append(ent, byte(prev))
		} else {
			ent = binary.LittleEndian.AppendUint32(append(ent, 0xfe), uint32(prev))
		}
		if v, err := strconv.ParseInt(e, 10, 64); err == nil && strconv.FormatInt(v, 10) == e {
			switch {
			case v >= 0 && v <= 12:
				ent = append(ent, 0xf1+byte(v))
			case v >= math.MinInt8 && v <= math.MaxInt8:
				ent = append(ent, 0xfe, byte(v))
			case v >= math.MinInt16 && v <= math.MaxInt16:
				ent = binary.LittleEndian.AppendUint16(append(ent, 0xc0), uint16(v))
			case v >= -1<<23 && v < 1<<23:
				ent = append(ent, 0xf0, byte(v), byte(v>>8), byte(v>>16))
			case v >= math.MinInt32 && v <= math.MaxInt32:
				ent = binary.LittleEndian.AppendUint32(append(ent, 0xd0), uint32(v))
			default:
				ent = binary.LittleEndian.AppendUint64(append(ent, 0xe0), uint64(v))
			}
		} else {
			switch n := len(e); {
			case n < 64:
				ent = append(ent, byte(n))
			case n < 16384:
				ent = append(ent, 0x40|byte(n>>8), byte(n))
			default:
				ent = binary.BigEndian.AppendUint32(append(ent, 0x80), uint32(n))
			}
			ent = append(ent, e...)
		}
		last = 10 + len(body)
		body = append(body, ent...)
		prev = len(ent)
	}
	b := binary.LittleEndian.AppendUint32(nil, uint32(11+len(body)))
	b = binary.LittleEndian.AppendUint32(b, uint32(last))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(elems)))
	return append(append(b, body...), 0xff)
}

// zipmap encodes field-value pairs as a zipmap, with one free byte after
// every value.
func zipmap(kv ...string) []byte {
	b := []byte{byte(len(kv) / 2)}
	zl := func(n int) []byte {
		if n < 254 {
			return []byte{byte(n)}
		}
		return binary.LittleEndian.AppendUint32([]byte{254}, uint32(n))
	}
	for i := 0; i < len(kv); i += 2 {
		b = append(append(b, zl(len(kv[i]))...), kv[i]...)
		b = append(append(b, zl(len(kv[i+1]))...), 1)
		b = append(append(b, kv[i+1]...), 'X')
	}
	return append(b, 0xff)
}

func intset(width int, vals ...int64) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(width))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(vals)))
	for _, v := range vals {
		switch width {
		case 2:
			b = binary.LittleEndian.AppendUint16(b, uint16(v))
		case 4:
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		default:
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	}
	return b
}

// file wraps key records in an RDB file of version ver with a checksum.
func file(ver int, records ...[]byte) []byte {
	b := []byte(fmt.Sprintf("REDIS%04d", ver))
	for _, r := range records {
		b = append(b, r...)
	}
	b = append(b, 0xff)
	if ver >= 5 {
		b = binary.LittleEndian.AppendUint64(b, rdb.CRC64(0, b))
	}
	return b
}

func record(typ byte, key string, body ...[]byte) []byte {
	b := append([]byte{typ}, rstr(key)...)
	for _, p := range body {
		b = append(b, p...)
	}
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestOldEncodings reads every encoding older Redis versions wrote.
func TestOldEncodings(t *testing.T) {
	big := strings.Repeat("w", 300)
	sd := func(f string) []byte { return append([]byte{byte(len(f))}, f...) }
	lzfLit := func(s string) []byte { // one literal run: valid LZF
		return cat([]byte{0xc3}, rlen(len(s)+1), rlen(len(s)), []byte{byte(len(s) - 1)}, []byte(s))
	}
	for _, c := range []struct {
		name string
		ver  int
		rec  []byte
		want string
	}{
		{"int8 string", 1, record(rdb.TypeString, "k", []byte{0xc0, 0x85}), `string "-123"`},
		{"int16 string", 1, record(rdb.TypeString, "k", []byte{0xc1, 0x39, 0x30}), `string "12345"`},
		{"int32 string", 1, record(rdb.TypeString, "k", []byte{0xc2, 0x00, 0x94, 0x35, 0x77}), `string "2000000000"`},
		{"lzf literal", 3, record(rdb.TypeString, "k", lzfLit("abc")), `string "abc"`},
		{"lzf back reference", 3, record(rdb.TypeString, "k", cat([]byte{0xc3}, rlen(4), rlen(9), []byte{0, 'a', 0xc0, 0})), `string "aaaaaaaaa"`},
		{"linked list", 1, record(rdb.TypeList, "k", rlen(3), rstr("a"), []byte{0xc0, 7}, rstr(big)), fmt.Sprintf("list \"a\" \"7\" %q", big)},
		{"plain set", 1, record(rdb.TypeSet, "k", rlen(2), rstr("x"), rstr("y")), `set "x" "y"`},
		{"string-double zset", 1, record(rdb.TypeZSet, "k", rlen(4), rstr("a"), sd("1.5"), rstr("b"), []byte{254}, rstr("c"), []byte{255}, rstr("d"), sd("-3")),
			`zset "c"=-inf "d"=-3 "a"=1.5 "b"=inf`},
		{"binary-double zset", 8, record(rdb.TypeZSet2, "k", rlen(1), rstr("a"), binary.LittleEndian.AppendUint64(nil, math.Float64bits(0.25))), `zset "a"=0.25`},
		{"plain hash", 2, record(rdb.TypeHash, "k", rlen(1), rstr("f"), rstr("v")), `hash "f"="v"`},
		{"zipmap hash", 2, record(rdb.TypeHashZipmap, "k", rstr(string(zipmap("f1", "v1", "long", big)))), fmt.Sprintf("hash \"f1\"=\"v1\" \"long\"=%q", big)},
		{"ziplist list", 4, record(rdb.TypeListZiplist, "k", rstr(string(ziplist("a", "0", "12", "13", "-100", "1000", "-8000000", "2000000000", "9000000000", big)))),
			fmt.Sprintf("list \"a\" \"0\" \"12\" \"13\" \"-100\" \"1000\" \"-8000000\" \"2000000000\" \"9000000000\" %q", big)},
		{"intset 16", 4, record(rdb.TypeSetIntset, "k", rstr(string(intset(2, -5, 3, 300)))), `set "-5" "3" "300"`},
		{"intset 32", 4, record(rdb.TypeSetIntset, "k", rstr(string(intset(4, -70000, 70000)))), `set "-70000" "70000"`},
		{"intset 64", 4, record(rdb.TypeSetIntset, "k", rstr(string(intset(8, -1<<40, 1<<40)))), `set "-1099511627776" "1099511627776"`},
		{"ziplist zset", 4, record(rdb.TypeZSetZiplist, "k", rstr(string(ziplist("a", "1", "b", "2.5", "c", "inf")))), `zset "a"=1 "b"=2.5 "c"=inf`},
		{"ziplist hash", 4, record(rdb.TypeHashZiplist, "k", rstr(string(ziplist("f", "1", "g", "text")))), `hash "f"="1" "g"="text"`},
		{"quicklist", 7, record(rdb.TypeListQuicklist, "k", rlen(2), rstr(string(ziplist("a", "b"))), rstr(string(ziplist("3", big)))), fmt.Sprintf("list \"a\" \"b\" \"3\" %q", big)},
		{"quicklist-2 plain node", 10, record(rdb.TypeListQuicklist2, "k", rlen(1), rlen(1), rstr(big)), fmt.Sprintf("list %q", big)},
		{"expiry in seconds", 1, cat([]byte{253}, binary.LittleEndian.AppendUint32(nil, 4000000000&0x7fffffff), record(rdb.TypeString, "k", rstr("v"))), `string "v"`},
		{"aux and resize", 9, cat([]byte{250}, rstr("redis-ver"), rstr("6.2.0"), []byte{254, 0, 251, 1, 0}, record(rdb.TypeString, "k", rstr("v"))), `string "v"`},
		{"idle and freq", 9, cat([]byte{248}, rlen(100), []byte{249, 5}, record(rdb.TypeString, "k", rstr("v"))), `string "v"`},
		{"module aux", 9, cat([]byte{247}, rlen(5), rlen(2), rlen(2), []byte{2}, rlen(7), []byte{5}, rstr("blob"), []byte{4}, make([]byte, 8), []byte{0}, record(rdb.TypeString, "k", rstr("v"))), `string "v"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := rdb.NewReader(c.name, file(c.ver, c.rec))
			if err != nil {
				t.Fatal(err)
			}
			rec, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if got := entryText(rec.Entry); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
			if _, err := r.Next(); err != io.EOF {
				t.Errorf("after the key: %v, want EOF", err)
			}
		})
	}
}

// TestStreamV1 reads a stream of type 15 (Redis 5 and 6), whose counters
// and group read counters are derived on loading.
func TestStreamV1(t *testing.T) {
	ks := keyspace.New(1, nil)
	st := keyspace.NewStream()
	for i := uint64(1); i <= 5; i++ {
		st.Append(keyspace.StreamID{Ms: 10, Seq: i}, [][]byte{[]byte("f"), []byte(strconv.FormatUint(i, 10))}, 4096, 100)
	}
	g := st.CreateGroup([]byte("g"), keyspace.StreamID{Ms: 10, Seq: 5}, 5)
	c := g.CreateConsumer([]byte("c"), 77)
	n := g.Claim(keyspace.StreamID{Ms: 10, Seq: 2}, nil, c)
	n.DeliveryTime, n.DeliveryCount = 88, 3
	_ = ks
	v2, typ, err := rdb.AppendValue(nil, &keyspace.Entry{Obj: st})
	if err != nil || typ != rdb.TypeStreamListpack2 {
		t.Fatal(typ, err)
	}
	// Cut the v2 fields out: after length and last id come first id, max
	// deleted id and entries added (5 lengths), and the group's entries
	// read (one length after its last id). The values are small: each
	// length is one byte.
	nodesEnd := bytes.Index(v2, []byte{5, 10, 5}) // length 5, last id 10-5
	v1 := append([]byte(nil), v2[:nodesEnd+3]...)
	rest := v2[nodesEnd+3+5:]
	// rest: group count, name, last id (2), entries read, …
	v1 = append(v1, rest[:1+2+2]...)
	v1 = append(v1, rest[1+2+2+1:]...)
	r, err := rdb.NewReader("v1", file(9, append([]byte{rdb.TypeStreamListpacks}, append(rstr("s"), v1...)...)))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	want := entryText(&keyspace.Entry{Obj: st})
	if got := entryText(rec.Entry); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// corpus is a file with one key of every type the writer knows.
func corpus(t testing.TB) []byte {
	var buf bytes.Buffer
	w := rdb.NewWriter(&buf, 1700000000)
	if err := w.Function("#!lua name=l\nredis.register_function('f', function() return 1 end)"); err != nil {
		t.Fatal(err)
	}
	if err := w.SelectDB(0, 6, 1); err != nil {
		t.Fatal(err)
	}
	l := keyspace.NewList(keyspace.ListMaxListpackSize)
	s := keyspace.NewSet()
	bigSet := keyspace.NewSet()
	h := keyspace.NewHash()
	z := keyspace.NewZSet()
	for i := 0; i < 40; i++ {
		v := []byte(strconv.Itoa(i * 1000))
		l.PushBack(v)
		l.PushBack([]byte(strings.Repeat("e", i)))
		s.Add(v, keyspace.SetMaxIntsetEntries)
		bigSet.Add([]byte("m"+string(v)), keyspace.SetMaxIntsetEntries)
		h.Set([]byte("f"+string(v)), v)
		z.Add(v, float64(i)/3, keyspace.DefaultZLimits())
	}
	st := keyspace.NewStream()
	for i := uint64(1); i <= 30; i++ {
		fv := [][]byte{[]byte("a"), []byte("1")}
		if i%4 == 0 {
			fv = append(fv, []byte("b"), []byte("two"))
		}
		st.Append(keyspace.StreamID{Ms: i, Seq: 0}, fv, 4096, 10)
	}
	g := st.CreateGroup([]byte("g"), keyspace.StreamID{Ms: 5}, 5)
	g.Claim(keyspace.StreamID{Ms: 3}, nil, g.CreateConsumer([]byte("c"), 1))
	for i, e := range []*keyspace.Entry{
		{Str: []byte("12345")}, {Str: []byte(strings.Repeat("abc", 50))},
		{Obj: l}, {Obj: s}, {Obj: bigSet}, {Obj: h}, {Obj: z}, {Obj: st},
	} {
		if err := w.Key([]byte("key"+strconv.Itoa(i)), e, int64(i)*1e12); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readAll reads a file to its end and returns the first error.
func readAll(name string, data []byte) (int, error) {
	r, err := rdb.NewReader(name, data)
	if err != nil {
		return 0, err
	}
	n := 0
	for {
		if _, err := r.Next(); err != nil {
			if err == io.EOF {
				return n, nil
			}
			return n, err
		}
		n++
	}
}

// TestCorruptFiles cuts a file at every length and flips every byte:
// every cut is an error naming the file and an offset, every flip is
// caught by the checksum, and with the checksum off no flip panics.
func TestCorruptFiles(t *testing.T) {
	data := corpus(t)
	if n, err := readAll("good.rdb", data); err != nil || n != 8 {
		t.Fatalf("the corpus reads %d keys, %v", n, err)
	}
	// A checksum of 0 means the writer computed none (rdbchecksum no).
	unsummed := append([]byte(nil), data...)
	binary.LittleEndian.PutUint64(unsummed[len(unsummed)-8:], 0)
	if n, err := readAll("nosum.rdb", unsummed); err != nil || n != 8 {
		t.Fatalf("without a checksum the corpus reads %d keys, %v", n, err)
	}
	for i := 0; i < len(data); i++ {
		_, err := readAll("cut.rdb", data[:i])
		var ce *rdb.CorruptError
		if !errors.As(err, &ce) || ce.Name != "cut.rdb" || ce.Offset > int64(i) {
			t.Fatalf("cut at %d: %v", i, err)
		}
		if !strings.HasPrefix(err.Error(), "cut.rdb: offset ") {
			t.Fatalf("cut at %d: %q does not name the file and offset", i, err)
		}
	}
	flipped := make([]byte, len(data))
	for i := 9; i < len(data)-9; i++ {
		copy(flipped, data)
		flipped[i] ^= 0x5a
		if _, err := readAll("flip.rdb", flipped); err == nil {
			t.Fatalf("flip at %d: no error", i)
		}
		// The same damage without a checksum reaches the decoders.
		binary.LittleEndian.PutUint64(flipped[len(flipped)-8:], 0)
		readAll("flip.rdb", flipped)
	}
}

// TestDumpPayload checks DUMP's footer: a flipped byte or a newer version
// is Redis's "version or checksum" error, a payload whose value does not
// decode is "Bad data format".
func TestDumpPayload(t *testing.T) {
	e := &keyspace.Entry{Str: []byte("hello world")}
	p, err := rdb.Dump(e)
	if err != nil {
		t.Fatal(err)
	}
	v, err := rdb.CheckPayload(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rdb.DecodeValue(v)
	if err != nil || string(got.Str) != "hello world" {
		t.Fatalf("%q %v", got.Str, err)
	}
	bad := append([]byte(nil), p...)
	bad[2] ^= 1
	if _, err := rdb.CheckPayload(bad); err != rdb.ErrPayload {
		t.Errorf("flipped payload: %v", err)
	}
	newer := append([]byte(nil), p[:len(p)-10]...)
	newer = binary.LittleEndian.AppendUint16(newer, rdb.Version+1)
	newer = binary.LittleEndian.AppendUint64(newer, rdb.CRC64(0, newer))
	if _, err := rdb.CheckPayload(newer); err != rdb.ErrPayload {
		t.Errorf("newer payload: %v", err)
	}
	for _, v := range [][]byte{{}, {rdb.TypeList, 0}, {rdb.TypeString, 5, 'a'}, {rdb.TypeModule2, 1}, {99}} {
		if _, err := rdb.DecodeValue(v); !errors.Is(err, rdb.ErrBadFormat) {
			t.Errorf("DecodeValue(%q) = %v", v, err)
		}
	}
}

func FuzzReader(f *testing.F) {
	data := corpus(f)
	f.Add(data)
	f.Add(extrasFile(f))
	f.Add(file(4, record(rdb.TypeListZiplist, "k", rstr(string(ziplist("a", "12", "-100", "9000000000"))))))
	f.Add(file(2, record(rdb.TypeHashZipmap, "k", rstr(string(zipmap("f", "v"))))))
	f.Add(file(4, record(rdb.TypeSetIntset, "k", rstr(string(intset(4, -1, 70000))))))
	f.Fuzz(func(t *testing.T, data []byte) {
		// With the checksum cleared, damage reaches the decoders.
		if len(data) > 8 {
			binary.LittleEndian.PutUint64(data[len(data)-8:], 0)
		}
		readAll("fuzz.rdb", data)
	})
}

func FuzzDecodeValue(f *testing.F) {
	for _, e := range []*keyspace.Entry{{Str: []byte("x")}, {Str: []byte(strings.Repeat("ab", 40))}} {
		p, _ := rdb.Dump(e)
		f.Add(p[:len(p)-10])
	}
	f.Add(append([]byte{rdb.TypeHashZiplist}, rstr(string(ziplist("f", "1")))...))
	f.Add(append([]byte{rdb.TypeListQuicklist}, append(rlen(1), rstr(string(ziplist("a", "b")))...)...))
	f.Fuzz(func(t *testing.T, v []byte) {
		e, err := rdb.DecodeValue(v)
		if err == nil {
			// Whatever decodes encodes and decodes to the same value.
			w, _, err := rdb.AppendValue(nil, e)
			if err != nil {
				t.Fatal(err)
			}
			_, typ, _ := rdb.AppendValue(nil, e)
			e2, err := rdb.DecodeValue(append([]byte{typ}, w...))
			if err != nil {
				t.Fatalf("re-encoded value does not decode: %v", err)
			}
			if entryText(e) != entryText(e2) {
				t.Fatalf("round trip changed the value:\n%s\n%s", entryText(e), entryText(e2))
			}
		}
	})
}

// TestVersion11AndModules reads a listpack set (RDB 11, Redis 7.2) and
// refuses a module value with the module's name and the offset.
func TestVersion11AndModules(t *testing.T) {
	h := keyspace.NewHash()
	h.Set([]byte("a"), []byte("17"))
	v, typ, err := rdb.AppendValue(nil, &keyspace.Entry{Obj: h})
	if err != nil || typ != rdb.TypeHashListpack {
		t.Fatal(typ, err)
	}
	// The same listpack of two elements, read as a set of two members.
	r, err := rdb.NewReader("v11", file(11, record(rdb.TypeSetListpack, "k", v)))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if got := entryText(rec.Entry); got != `set "17" "a"` {
		t.Errorf("listpack set: %s", got)
	}
	// Module type ids hold a nine-character name in 6-bit characters.
	const charset = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var id uint64
	for _, c := range "ReJSON-RL" {
		id = id<<6 | uint64(strings.IndexRune(charset, c))
	}
	id = id<<10 | 3
	body := append([]byte{0x81}, binary.BigEndian.AppendUint64(nil, id)...)
	_, err = readAll("mod.rdb", file(9, record(rdb.TypeModule2, "doc", body)))
	if err == nil || !strings.Contains(err.Error(), "ReJSON-RL") || !strings.Contains(err.Error(), "mod.rdb: offset ") || !strings.Contains(err.Error(), `key "doc"`) {
		t.Errorf("module value: %v", err)
	}
}

// TestDuplicateKey: a file holding a key twice does not load, as in
// Redis, with an error naming the file and where the second record starts,
// whether the duplicate comes in the first batch of keys handed to the
// inserter or much later, with or without an expiry.
func TestDuplicateKey(t *testing.T) {
	for _, tt := range []struct {
		name       string
		keys, at   int // distinct keys, and which one is written again after them
		exp1, exp2 int64
	}{
		{"first batch", 3, 1, 0, 0},
		{"later batch", 5000, 17, 0, 0},
		{"with expiry", 2500, 2400, 4e12, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := rdb.NewWriter(&buf, 0)
			if err := w.SelectDB(0, 0, 0); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < tt.keys; i++ {
				exp := int64(0)
				if i == tt.at {
					exp = tt.exp1
				}
				if err := w.Key([]byte("k"+strconv.Itoa(i)), &keyspace.Entry{Str: []byte("v")}, exp); err != nil {
					t.Fatal(err)
				}
			}
			again := &keyspace.Entry{Str: []byte("again")}
			if err := w.Key([]byte("k"+strconv.Itoa(tt.at)), again, tt.exp2); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			rec, err := rdb.AppendRecord(nil, []byte("k"+strconv.Itoa(tt.at)), again, tt.exp2)
			if err != nil {
				t.Fatal(err)
			}
			second := int64(buf.Len() - 9 - len(rec)) // before EOF and the checksum
			path := filepath.Join(t.TempDir(), "dup.rdb")
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = rdb.Load(path, keyspace.New(16, nil), 0, true)
			var ce *rdb.CorruptError
			want := fmt.Sprintf("duplicated key %q in DB 0", "k"+strconv.Itoa(tt.at))
			if !errors.As(err, &ce) || ce.Name != path || ce.Offset != second || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want a CorruptError of %s at offset %d saying %s", err, path, second, want)
			}
		})
	}
}

// TestRestoredStringOwnsItsBytes: a value RESTORE decodes allocates its
// own bytes, not a chunk of a loader's arena that the key would pin,
// whether stored plain, as an integer or LZF-compressed.
func TestRestoredStringOwnsItsBytes(t *testing.T) {
	for _, v := range []string{"short", "12345", strings.Repeat("abc", 40)} {
		p, err := rdb.Dump(&keyspace.Entry{Str: []byte(v)})
		if err != nil {
			t.Fatal(err)
		}
		body, err := rdb.CheckPayload(p)
		if err != nil {
			t.Fatal(err)
		}
		const runs = 100
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := 0; i < runs; i++ {
			e, err := rdb.DecodeValue(body)
			if err != nil || string(e.Str) != v {
				t.Fatalf("%q restored as %q, %v", v, e.Str, err)
			}
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 1024 {
			t.Errorf("restoring %q allocates %d bytes", v, per)
		}
	}
}

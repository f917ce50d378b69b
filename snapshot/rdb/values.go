package rdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/recached/recached/server/keyspace"
)

// errEmpty reports a collection with no elements, which Redis skips when
// loading a file and refuses in RESTORE.
var errEmpty = errors.New("empty collection")

// value reads a value of RDB type t into e. An empty collection leaves
// d.err nil and returns errEmpty.
func (d *dec) value(t byte, e *keyspace.Entry) error {
	d.ibuf = d.ibuf[:0]
	var o keyspace.Object
	switch t {
	case TypeString:
		s := d.keptStr("string value")
		if d.err == nil {
			e.Str = s
		}
		return d.err
	case TypeList:
		n := d.count("list", 1)
		l := keyspace.NewList(keyspace.ListMaxListpackSize)
		for i := 0; i < n && d.err == nil; i++ {
			l.PushBack(d.str("list element"))
			d.ibuf = d.ibuf[:0]
		}
		o = l
	case TypeSet:
		n := d.count("set", 1)
		s := keyspace.NewSet()
		for i := 0; i < n && d.err == nil; i++ {
			start := d.off
			m := d.str("set member")
			if d.err == nil && !s.Add(m, keyspace.SetMaxIntsetEntries) {
				d.failAt(start, "duplicate set member")
			}
			d.ibuf = d.ibuf[:0]
		}
		o = s
	case TypeZSet, TypeZSet2:
		n := d.count("zset", 2)
		z := keyspace.NewZSetSized(n, 0, keyspace.DefaultZLimits())
		for i := 0; i < n && d.err == nil; i++ {
			start := d.off
			m := d.str("zset member")
			var score float64
			if t == TypeZSet {
				score = d.stringDouble("zset score")
			} else {
				score = d.binaryDouble("zset score")
			}
			d.addScore(z, m, score, start)
			d.ibuf = d.ibuf[:0]
		}
		o = z
	case TypeHash:
		n := d.count("hash", 2)
		h := keyspace.NewHash()
		for i := 0; i < n && d.err == nil; i++ {
			start := d.off
			f := d.str("hash field")
			v := d.str("hash value")
			if d.err == nil && !h.Set(f, v) {
				d.failAt(start, "duplicate hash field")
			}
			d.ibuf = d.ibuf[:0]
		}
		// A plain hash was a hash table where it was saved: the keyspace
		// packs it again only if it fits (keyspace.Hash.Fit).
		h.Fit(keyspace.HashLimits{Entries: -1})
		o = h
	case TypeHashZipmap, TypeListZiplist, TypeSetIntset, TypeZSetZiplist, TypeHashZiplist, TypeHashListpack, TypeZSetListpack, TypeSetListpack:
		o = d.blobValue(t)
	case TypeListQuicklist, TypeListQuicklist2:
		o = d.quicklist(t)
	case TypeStreamListpacks, TypeStreamListpack2, TypeStreamListpack3:
		o = d.stream(t)
	case TypeModule, TypeModule2:
		start := d.off
		id := d.plainLen("module id")
		if d.err == nil {
			d.failAt(start, "a value of module %s, which recached cannot load", moduleName(id))
		}
		return d.err
	default:
		d.fail("unknown value type %d", t)
		return d.err
	}
	if d.err != nil {
		return d.err
	}
	if o.(interface{ Len() int }).Len() == 0 && t != TypeStreamListpacks && t != TypeStreamListpack2 && t != TypeStreamListpack3 {
		return errEmpty
	}
	e.Obj = o
	return nil
}

func (d *dec) addScore(z *keyspace.ZSet, m []byte, score float64, start int) {
	if d.err != nil {
		return
	}
	if math.IsNaN(score) {
		d.failAt(start, "zset score is NaN")
	} else if !z.Add(m, score, keyspace.DefaultZLimits()) {
		d.failAt(start, "duplicate zset member")
	}
}

// blobValue reads a collection stored as one compact string.
func (d *dec) blobValue(t byte) keyspace.Object {
	start := d.off
	b := d.str(typeName(t) + " blob")
	if d.err != nil {
		return nil
	}
	var elems [][]byte
	var err error
	switch t {
	case TypeHashZipmap:
		elems, err = zipmapElems(b, d.elems[:0])
	case TypeSetIntset:
		elems, err = intsetElems(b, d.elems[:0], &d.ibuf)
	case TypeListZiplist, TypeZSetZiplist, TypeHashZiplist:
		elems, err = ziplistElems(b, d.elems[:0], &d.ibuf)
	default:
		elems, err = listpackElems(b, d.elems[:0], &d.ibuf)
	}
	d.elems = elems[:0]
	if err != nil {
		d.failAt(start, "%s: %v", typeName(t), err)
		return nil
	}
	switch t {
	case TypeListZiplist:
		l := keyspace.NewList(keyspace.ListMaxListpackSize)
		for _, v := range elems {
			l.PushBack(v)
		}
		return l
	case TypeSetIntset, TypeSetListpack:
		s := keyspace.NewSet()
		for _, v := range elems {
			if !s.Add(v, keyspace.SetMaxIntsetEntries) {
				d.failAt(start, "duplicate set member")
				return nil
			}
		}
		return s
	case TypeZSetZiplist, TypeZSetListpack:
		if len(elems)%2 != 0 {
			d.failAt(start, "zset of an odd number of elements")
			return nil
		}
		z := keyspace.NewZSetSized(len(elems)/2, 0, keyspace.DefaultZLimits())
		for i := 0; i < len(elems) && d.err == nil; i += 2 {
			score, err := strconv.ParseFloat(string(elems[i+1]), 64)
			if err != nil {
				d.failAt(start, "zset score %q is not a number", elems[i+1])
				return nil
			}
			d.addScore(z, elems[i], score, start)
		}
		return z
	default: // hashes
		if len(elems)%2 != 0 {
			d.failAt(start, "hash of an odd number of elements")
			return nil
		}
		// A listpack stays one, whatever its lengths, unless it has too
		// many entries (keyspace.Hash.Fit).
		h := keyspace.NewHash()
		if h.SetPairs(elems, keyspace.HashLimits{Entries: keyspace.DefaultHashLimits().Entries, Value: math.MaxInt}) != len(elems)/2 {
			d.failAt(start, "duplicate hash field")
			return nil
		}
		return h
	}
}

// quicklist reads a list of nodes: ziplists (type 14), or a container
// kind and a listpack or one plain element (type 18).
func (d *dec) quicklist(t byte) keyspace.Object {
	n := d.count("quicklist", 2)
	l := keyspace.NewList(keyspace.ListMaxListpackSize)
	elems := d.elems[:0]
	defer func() { d.elems = elems[:0] }()
	for i := 0; i < n && d.err == nil; i++ {
		container := uint64(containerPacked)
		if t == TypeListQuicklist2 {
			container = d.plainLen("quicklist node container")
		}
		start := d.off
		b := d.str("quicklist node")
		if d.err != nil {
			break
		}
		var err error
		elems = elems[:0]
		switch {
		case container == containerPlain:
			elems = append(elems, b)
		case container != containerPacked:
			d.failAt(start, "unknown quicklist container %d", container)
		case t == TypeListQuicklist:
			elems, err = ziplistElems(b, elems, &d.ibuf)
		default:
			elems, err = listpackElems(b, elems, &d.ibuf)
		}
		if err != nil {
			d.failAt(start, "quicklist node: %v", err)
		}
		if d.err == nil && len(elems) == 0 {
			d.failAt(start, "empty quicklist node")
		}
		for _, v := range elems {
			l.PushBack(v)
		}
		d.ibuf = d.ibuf[:0]
	}
	return l
}

// moduleName decodes the nine-character name in a module type id.
func moduleName(id uint64) string {
	const charset = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var name [9]byte
	for i := range name {
		name[i] = charset[id>>(64-6*(i+1))&63]
	}
	return fmt.Sprintf("%s (encoding version %d)", name[:], id&1023)
}

// skipModule skips a module's opcode-tagged data up to its end opcode.
func (d *dec) skipModule() {
	for d.err == nil {
		start := d.off
		switch op := d.plainLen("module opcode"); op {
		case moduleOpEOF:
			return
		case moduleOpSInt, moduleOpUInt:
			d.plainLen("module integer")
		case moduleOpFloat:
			d.take(4, "module float")
		case moduleOpDbl:
			d.take(8, "module double")
		case moduleOpStr:
			d.str("module string")
		default:
			if d.err == nil {
				d.failAt(start, "unknown module opcode %d", op)
			}
		}
	}
}

// streamID16 decodes a 16-byte big-endian stream id (rax keys, PEL ids);
// a shorter b (after a failed read) gives 0-0.
func streamID16(b []byte) keyspace.StreamID {
	if len(b) < 16 {
		return keyspace.StreamID{}
	}
	return keyspace.StreamID{Ms: binary.BigEndian.Uint64(b), Seq: binary.BigEndian.Uint64(b[8:])}
}

package snapshot

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/recached/recached/server/keyspace"
)

// encodeJSON writes a json value: the document's compact JSON text as bin.
func encodeJSON(enc *msgpack.Encoder, o keyspace.Object) error {
	doc, ok := o.(*keyspace.JSON)
	if !ok {
		return fmt.Errorf("snapshot: json value of type %T", o)
	}
	return encodeBin(enc, doc.Text())
}

// encodeRateLimit writes a ratelimit value: [tat, interval, burst].
func encodeRateLimit(enc *msgpack.Encoder, o keyspace.Object) error {
	rl, ok := o.(*keyspace.RateLimit)
	if !ok {
		return fmt.Errorf("snapshot: ratelimit value of type %T", o)
	}
	if err := enc.EncodeArrayLen(3); err != nil {
		return err
	}
	for _, n := range []int64{rl.TAT, rl.Interval, rl.Burst} {
		if err := enc.EncodeInt(n); err != nil {
			return err
		}
	}
	return nil
}

// json reads a json value; text that is not one valid document is
// corruption.
func (r *Reader) json() (keyspace.Object, error) {
	text, err := r.bin("json document")
	if err != nil {
		return nil, err
	}
	doc, err := keyspace.ParseJSON(text)
	if err != nil {
		return nil, r.corrupt("json document: " + err.Error())
	}
	return doc, nil
}

// ratelimit reads a ratelimit value; a state no limiter can be in is
// corruption.
func (r *Reader) ratelimit() (keyspace.Object, error) {
	err := r.tuple("ratelimit", 3)
	if err != nil {
		return nil, err
	}
	var v [3]int64
	for i := range v {
		if v[i], err = r.dec.DecodeInt64(); err != nil {
			return nil, r.fail("bad ratelimit state", err)
		}
	}
	rl := &keyspace.RateLimit{TAT: v[0], Interval: v[1], Burst: v[2]}
	if rl.TAT <= 0 || !(keyspace.Quota{Burst: rl.Burst, Interval: rl.Interval}).Valid() {
		return nil, r.corrupt(fmt.Sprintf("invalid ratelimit state %v", v))
	}
	return rl, nil
}

package snapshot

import (
	"fmt"
	"strconv"

	"github.com/recached/recached/server/keyspace"
)

// addSampleLists adds list values to the sample keyspace: a short one with
// an empty and a binary element, and a long one.
func addSampleLists(db *keyspace.DB) {
	l := keyspace.NewList(keyspace.ListMaxListpackSize)
	for _, v := range []string{"first", "", "\x00\xff", "last"} {
		l.PushBack([]byte(v))
	}
	db.Set([]byte("list"), &keyspace.Entry{Obj: l})
	long := keyspace.NewList(keyspace.ListMaxListpackSize)
	for i := 0; i < 5000; i++ {
		long.PushBack([]byte(strconv.Itoa(i)))
	}
	db.Set([]byte("longlist"), &keyspace.Entry{Obj: long})
	db.SetExpiry([]byte("longlist"), farFuture)
}

// describeOther renders values of types describeValue does not know.
func describeOther(e *keyspace.Entry) []string {
	var parts []string
	if l, ok := e.Obj.(*keyspace.List); ok {
		l.Range(func(v []byte) bool { parts = append(parts, fmt.Sprintf("%q", v)); return true })
		return parts
	}
	return []string{fmt.Sprintf("%T", e.Obj)}
}

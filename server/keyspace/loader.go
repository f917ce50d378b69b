package keyspace

import (
	"fmt"
	"sync/atomic"
)

// Loader puts the keys of a snapshot or an RDB file into a keyspace while
// the caller goes on decoding: decoding and inserting (mostly cache misses)
// overlap. Its goroutine is the only one touching the keyspace until Close
// returns; no other may use the keyspace meanwhile.
type Loader struct {
	ks       *Keyspace
	batches  chan []loadItem
	free     chan []loadItem
	inserted chan struct{}
	cur      []loadItem
	// dup is the first key found twice; the inserter stops there.
	dup atomic.Pointer[DuplicateError]
}

// DuplicateError reports a key that a file holds twice. Redis refuses to
// load such a file, and so do recached's loaders: one of the two values
// would be lost.
type DuplicateError struct {
	DB  int
	Key string
	// Offset is where the caller said the second record was.
	Offset int64
}

// Error describes the duplicate as Redis's log line does.
func (e *DuplicateError) Error() string {
	return fmt.Sprintf("duplicated key %q in DB %d", e.Key, e.DB)
}

// loadItem is one decoded key on its way into the keyspace.
type loadItem struct {
	db  int
	key string
	e   *Entry
	exp int64
	off int64
}

// loadBatch is how many keys the decoder hands over at a time.
const loadBatch = 1024

// NewLoader starts a loader into ks.
func NewLoader(ks *Keyspace) *Loader {
	l := &Loader{
		ks:       ks,
		batches:  make(chan []loadItem, 4),
		free:     make(chan []loadItem, 4),
		inserted: make(chan struct{}),
		cur:      make([]loadItem, 0, loadBatch),
	}
	go l.insert()
	return l
}

func (l *Loader) insert() {
	defer close(l.inserted)
	for b := range l.batches {
		if l.dup.Load() == nil {
			for i := range b {
				it := &b[i]
				l.ks.FitEncoding(it.e)
				if !l.ks.DBs[it.db].Load(it.key, it.e, it.exp) {
					l.dup.Store(&DuplicateError{DB: it.db, Key: it.key, Offset: it.off})
					break
				}
			}
		}
		select {
		case l.free <- b[:0]:
		default:
		}
	}
}

// Add queues key (which the keyspace keeps as it is: its bytes must never
// change) with e and its expiry for database db; off is where the file
// holds it, for the error about a duplicate. Add returns a duplicate found
// so far (checked once per batch), after which loading is pointless.
func (l *Loader) Add(db int, key string, e *Entry, exp, off int64) error {
	l.cur = append(l.cur, loadItem{db: db, key: key, e: e, exp: exp, off: off})
	if len(l.cur) == loadBatch {
		l.flush()
		if d := l.dup.Load(); d != nil {
			return d
		}
	}
	return nil
}

func (l *Loader) flush() {
	if len(l.cur) == 0 {
		return
	}
	l.batches <- l.cur
	select {
	case l.cur = <-l.free:
	default:
		l.cur = make([]loadItem, 0, loadBatch)
	}
}

// Close inserts what is queued, waits until every key is in place and
// returns the first duplicated key, a *DuplicateError, if there was one.
func (l *Loader) Close() error {
	l.flush()
	close(l.batches)
	<-l.inserted
	if d := l.dup.Load(); d != nil {
		return d
	}
	return nil
}

// FitEncoding encodes e's value by the keyspace's thresholds, as Redis
// encodes a value it loads (from a file or RESTORE): compact when small
// enough, whatever the encoding it was saved in.
func (ks *Keyspace) FitEncoding(e *Entry) {
	switch o := e.Obj.(type) {
	case *Hash:
		o.Fit(ks.HashLimits())
	case *ZSet:
		o.Fit(ks.ZSetLimits())
	}
}

// EncodeLike makes ks encode values by from's thresholds: a keyspace a
// reload fills before it replaces from's data (DEBUG RELOAD).
func (ks *Keyspace) EncodeLike(from *Keyspace) {
	ks.SetHashLimits(from.HashLimits())
	ks.SetZSetLimits(from.ZSetLimits())
}

package keyspace

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
}

// loadItem is one decoded key on its way into the keyspace.
type loadItem struct {
	db  int
	key string
	e   *Entry
	exp int64
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
		for _, it := range b {
			l.ks.DBs[it.db].Load(it.key, it.e, it.exp)
		}
		select {
		case l.free <- b[:0]:
		default:
		}
	}
}

// Add queues key (which the keyspace keeps as it is: its bytes must never
// change) with e and its expiry for database db.
func (l *Loader) Add(db int, key string, e *Entry, exp int64) {
	l.cur = append(l.cur, loadItem{db: db, key: key, e: e, exp: exp})
	if len(l.cur) == loadBatch {
		l.flush()
	}
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

// Close inserts what is queued and waits until every key is in place.
func (l *Loader) Close() {
	l.flush()
	close(l.batches)
	<-l.inserted
}

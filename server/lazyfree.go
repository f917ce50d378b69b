package server

import (
	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

// Lazy freeing, as INFO reports it.
//
// recached never frees a value on the event loop: a deleted value is
// unlinked in O(1) and Go's collector frees it concurrently, whatever
// lazyfree-lazy-* says, so nothing is ever pending (lazyfree_pending_objects
// is 0). lazyfreed_objects counts what Redis would have handed to its
// background thread: a value UNLINKed, or DELeted under
// lazyfree-lazy-user-del, whose free effort is over lazyfreeThreshold, and
// every key of a database flushed ASYNC (or under
// lazyfree-lazy-user-flush).

// lazyfreeThreshold is Redis's LAZYFREE_THRESHOLD.
const lazyfreeThreshold = 64

// noteLazyDel counts key's value, about to be deleted lazily, in
// lazyfreed_objects when Redis would free it in the background.
func (s *Session) noteLazyDel(key []byte) {
	if e := s.db.Peek(key); e != nil && keyspace.FreeEffort(e) > lazyfreeThreshold {
		s.srv.mem.lazyFreed.Add(1)
	}
}

// flushLazily reports whether the running FLUSHDB or FLUSHALL frees
// asynchronously: ASYNC, or no argument under lazyfree-lazy-user-flush.
func (s *Session) flushLazily() bool {
	if len(s.Args) == 2 {
		return resp.EqualFold(s.Args[1], "async")
	}
	return s.srv.mem.lazyUserFlush.Load()
}

// noteLazyFlush counts the keys of db, about to be flushed, in
// lazyfreed_objects when the flush is asynchronous. The caller holds every
// shard lock of db.
func (s *Session) noteLazyFlush(db *keyspace.DB) {
	n := 0
	for i := 0; i < keyspace.NumShards; i++ {
		n += db.Len(i)
	}
	s.srv.mem.lazyFreed.Add(int64(n))
}

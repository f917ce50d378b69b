package server

import (
	"log"
	"path/filepath"
	"strings"
	"time"

	"github.com/recached/recached/server/keyspace"
	"github.com/recached/recached/snapshot"
)

// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE], as Redis 7.0's: save the
// dataset (unless NOSAVE), empty the databases (unless NOFLUSH) and load
// the snapshot back, in recached's own format (dump.rcd, the file a
// restart loads). The snapshot is decoded into a separate keyspace first,
// so that a damaged file, or a key already present under NOFLUSH without
// MERGE (where Redis stops the server), is refused with the dataset
// untouched; the swap then happens with every shard of every database
// locked. The snapshot must be the whole dataset: a write that slips in
// between the save and the swap makes the save run again, and NOSAVE is
// refused while the append-only log holds writes the snapshot has not (the
// dataset would then differ from what a restart loads).

// reloadTries bounds the saves DEBUG RELOAD makes while writes keep
// slipping in between a save and the swap.
const reloadTries = 5

const errReloadLoad = "ERR Error trying to load the RDB dump"

// debugReload is DEBUG RELOAD.
func debugReload(s *Session) {
	merge, flush, save := false, true, true
	for _, a := range s.Args[2:] {
		switch strings.ToLower(string(a)) {
		case "merge":
			merge = true
		case "noflush":
			flush = false
		case "nosave":
			save = false
		default:
			s.W.Error("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.")
			return
		}
	}
	srv, p := s.srv, s.srv.persist
	for try := 0; ; try++ {
		if save {
			if err := p.save(saveRDB); err != nil {
				log.Printf("recached: DEBUG RELOAD: save failed: %v", err)
				s.W.Error("ERR")
				return
			}
		}
		tmp := keyspace.New(len(srv.ks.DBs), nil)
		tmp.EncodeLike(srv.ks)
		dir := p.dir
		if dir == "" {
			dir = srv.Config().Dir // persistence not opened: where SAVE writes
		}
		if dir == "" {
			dir = "."
		}
		path := filepath.Join(dir, snapshot.SnapshotName)
		if _, _, _, err := snapshot.LoadWith(path, tmp, snapshot.Hooks{}, time.Now().UnixMilli(), false); err != nil {
			log.Printf("recached: DEBUG RELOAD: loading %s: %v", path, err)
			s.W.Error(errReloadLoad)
			return
		}
		srv.lockAll(srv.ks.DBs...)
		// Writes since the save's instant are not in the snapshot: without
		// NOSAVE they would be lost, with it they are in the log (if any).
		if srv.dirty.Load() != 0 && (save || p.log.Load() != nil) {
			srv.unlockAll(srv.ks.DBs...)
			if !save {
				s.W.Error("ERR DEBUG RELOAD NOSAVE would drop the writes made since the last save, which only the append-only log holds: SAVE first")
				return
			}
			if try+1 == reloadTries {
				s.W.Error("ERR DEBUG RELOAD: writes kept changing the dataset during the save")
				return
			}
			continue
		}
		err := srv.swapIn(tmp, flush, merge)
		srv.unlockAll(srv.ks.DBs...)
		if err != "" {
			s.W.Error(err)
			return
		}
		log.Printf("DB reloaded by DEBUG RELOAD")
		s.W.OK()
		return
	}
}

// swapIn moves every key of tmp into the server's keyspace, emptying each
// database first when flush is set; a key present in both is refused
// (before anything changes) unless merge is set, where tmp's wins. Watched
// keys of an emptied database are touched, as Redis's emptyData does. The
// caller holds every shard lock; it returns "" or the error reply.
func (srv *Server) swapIn(tmp *keyspace.Keyspace, flush, merge bool) string {
	if !flush && !merge {
		for d, db := range tmp.DBs {
			live := srv.ks.DBs[d]
			for i := 0; i < keyspace.NumShards; i++ {
				dup := false
				db.Range(i, func(k string, _ *keyspace.Entry) bool {
					dup = live.Peek([]byte(k)) != nil
					return !dup
				})
				if dup {
					return errReloadLoad
				}
			}
		}
	}
	for d, db := range tmp.DBs {
		live := srv.ks.DBs[d]
		if flush {
			srv.touchDB(d)
			for i := 0; i < keyspace.NumShards; i++ {
				live.Clear(i)
			}
		}
		for i := 0; i < keyspace.NumShards; i++ {
			db.Range(i, func(k string, e *keyspace.Entry) bool {
				at, _ := db.Expiry([]byte(k))
				live.Load(k, e, at)
				return true
			})
		}
	}
	return ""
}

package server

import (
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/recached/recached/server/keyspace"
	"github.com/recached/recached/snapshot"
	"github.com/recached/recached/snapshot/rdb"
)

// Persistence (SPEC section 7, snapshot/FORMAT.md).
//
// The data directory holds the snapshot dump.rcd of generation g and the
// logs appendonly.<g>.aof, appendonly.<g+1>.aof, …: the log of generation g
// holds the effects that happened after the snapshot of generation g
// started. At start the snapshot is loaded and every log of its generation
// or later is replayed in order.
//
// A save (SAVE, BGSAVE, BGREWRITEAOF, the save rules, the automatic log
// rewrite and shutdown are all the same operation) creates the next
// generation's log, then with every shard locked marks the snapshot's
// point in time: new effects go to the new log from that instant, and the
// dumper starts. It then encodes one shard at a time under that shard's
// lock. A write command that runs meanwhile on a shard not yet dumped first
// keeps the pre-image of each of its keys (the encoded record, or "absent"),
// which the dumper writes instead of the live value, so that the image is
// the state at the instant the save started. Once the snapshot is renamed
// into place, the logs of older generations are deleted.
//
// Lock order: see server/LOCKS.md.

// defaultRewriteMin is the log size below which it is never rewritten
// automatically (Redis's auto-aof-rewrite-min-size).
const defaultRewriteMin = 64 << 20

// bgsaveRetryDelay is how long the save rules wait after a failed save
// before trying again, in seconds, as Redis does.
const bgsaveRetryDelay = 5

// The kinds of save, for INFO and the replies of SAVE, BGSAVE and
// BGREWRITEAOF.
const (
	saveNone    = 0
	saveRDB     = 1 // SAVE, BGSAVE, save rules, shutdown
	saveRewrite = 2 // BGREWRITEAOF, automatic rewrite
	saveSwitch  = 3 // CONFIG SET appendonly no closing the log
)

// The shutdown modes SHUTDOWN sets.
const (
	shutdownDefault = 0
	shutdownNoSave  = 1
	shutdownSave    = 2
)

// persister is the server's persistence state.
type persister struct {
	srv *Server

	dir  string
	lock *os.File
	// log is the append-only log, nil while it is off. CONFIG SET
	// appendonly switches it with every shard locked (enableLog,
	// disableLog); the publisher and Commit load it once per use.
	log atomic.Pointer[snapshot.LogWriter]
	// fsyncs is the latency histogram of the log's fsyncs, for metrics.
	fsyncs latencyHist
	open   bool

	// gen is the generation of the current log and of the snapshot the
	// next save will supersede.
	gen atomic.Uint64

	snap atomic.Pointer[snapState]
	// kind is the save in progress: saveNone, saveRDB, saveRewrite. It is
	// read freely but changed only with idleMu held (claim, release);
	// idle is signalled when it returns to saveNone.
	kind   atomic.Int32
	idleMu sync.Mutex
	idle   *sync.Cond

	// units numbers the transactions written to the log (persist_unit.go);
	// a start moves it past every number its logs hold.
	units atomic.Uint64

	bgsaveScheduled  atomic.Bool
	rewriteScheduled atomic.Bool
	shutdown         atomic.Int32

	// fromRDB is the Redis RDB file the start loaded, "" for none.
	fromRDB string

	saveStart        atomic.Int64 // unix seconds the running save started
	lastTry          atomic.Int64 // unix seconds of the last background save attempt
	lastRDBOK        atomic.Bool
	lastRewriteOK    atomic.Bool
	lastRDBSecs      atomic.Int64
	lastRewriteSecs  atomic.Int64
	rdbSaves         atomic.Int64
	rewrites         atomic.Int64
	rewriteFailures  atomic.Int64
	rewriteBase      atomic.Int64
	rewriteMin       int64
	loadedKeys       int64
	loadExpired      int64
	keysTotal        atomic.Int64
	keysDone         atomic.Int64
	logRecordsLoaded int64

	stop chan struct{}
	wg   sync.WaitGroup

	// dumpHook, when set (tests), runs after each shard is dumped.
	dumpHook func(db, shard int)
}

func newPersister(srv *Server) *persister {
	p := &persister{srv: srv, rewriteMin: defaultRewriteMin, stop: make(chan struct{})}
	p.idle = sync.NewCond(&p.idleMu)
	p.lastRDBOK.Store(true)
	p.lastRewriteOK.Store(true)
	p.lastRDBSecs.Store(-1)
	p.lastRewriteSecs.Store(-1)
	return p
}

// OpenPersistence prepares the data directory, loads the snapshot, replays
// the logs that follow it and starts the append-only log and the
// background work (fsync every second, save rules, automatic rewrite).
// Call it once, before serving.
func (srv *Server) OpenPersistence() error {
	p := srv.persist
	cfg := srv.Config()
	p.dir = cfg.Dir
	if p.dir == "" {
		p.dir = "."
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	lf, err := os.OpenFile(filepath.Join(p.dir, "recached.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lf.Close()
		return fmt.Errorf("data directory %s is in use by another recached process", p.dir)
	}
	p.lock = lf
	if err := snapshot.RemoveStaleTemp(p.dir); err != nil {
		p.unlock()
		return err
	}
	start := time.Now()
	last, lastEnd, err := p.load()
	if err != nil {
		p.unlock()
		return err
	}
	log.Printf("recached: loaded %d keys (%d already expired) and %d log records from %s in %v",
		p.loadedKeys, p.loadExpired, p.logRecordsLoaded, p.dir, time.Since(start).Round(time.Millisecond))
	if cfg.AppendOnly {
		policy, err := snapshot.ParseFsync(cfg.AppendFsync)
		if err != nil {
			p.unlock()
			return err
		}
		var f *os.File
		var size int64
		if last != "" {
			f, err = snapshot.OpenLogAppend(last, lastEnd)
			size = lastEnd
		} else {
			f, size, err = snapshot.CreateLog(p.dir, snapshot.Header{Version: snapshot.Version, Generation: p.gen.Load(), Created: time.Now().UnixMilli()})
		}
		if err != nil {
			p.unlock()
			return err
		}
		p.log.Store(p.newLogWriter(f, size, policy))
		p.rewriteBase.Store(size)
	}
	// From here on publish hands every effect to the log first, while it
	// is on; Commit writes it.
	srv.SetCommit(p.commit)
	// Every message a channel's history records goes to the log too,
	// committed by the same Commit.
	srv.pubsub.hist.logf = p.logHistory
	srv.dirty.Store(0)
	p.open = true
	if p.fromRDB != "" {
		// What came from the Redis file goes into recached's own snapshot
		// in the background, while serving; until that save commits, the
		// base file makes a restart load the RDB file again and replay
		// the logs on top.
		p.startBackground(saveRDB)
	}
	p.wg.Add(1)
	go p.background()
	return nil
}

// newLogWriter returns the writer of an open log file holding size bytes.
func (p *persister) newLogWriter(f *os.File, size int64, policy snapshot.Fsync) *snapshot.LogWriter {
	l := snapshot.NewLogWriter(f, size, policy)
	l.OnSync = p.fsyncs.record
	l.Fatal = func(err error) {
		log.Fatalf("recached: can't write the append-only log with appendfsync always (%v): exiting rather than acknowledge writes that are not on disk", err)
	}
	return l
}

// commit is the server's Commit: the open log's group commit.
func (p *persister) commit() {
	if l := p.log.Load(); l != nil {
		l.Commit()
	}
}

func (p *persister) unlock() {
	if p.lock != nil {
		_ = syscall.Flock(int(p.lock.Fd()), syscall.LOCK_UN)
		p.lock.Close()
		p.lock = nil
	}
}

// onEffect appends one effect to the append-only log. The publisher calls
// it before any hook (see publish). A change made under a DEDUP mark is
// logged with the mark, so that replaying it restores the mark too; a mark
// raised by a command that changed nothing (EffectMark) is logged alone.
func onEffect(l *snapshot.LogWriter, e *Effect) {
	unit := logUnitOf(e)
	switch {
	case e.ClientID != nil:
		args := e.Args
		if e.Kind == EffectMark {
			args = nil
		}
		l.AppendEffect(unit, e.DB, args, e.ClientID, e.WireID, time.Now().UnixMilli())
	case unit != 0:
		l.AppendUnitCommand(unit, e.DB, e.Args)
	default:
		l.AppendCommand(e.DB, e.Args)
	}
}

// restoreMark raises a DEDUP mark read back from the snapshot or the log.
func (p *persister) restoreMark(m snapshot.Marks) {
	p.srv.dedup.Raise(m.ClientID, m.High, m.LastSeen)
}

// logFile is one log found in the data directory.
type logFile struct {
	gen  uint64
	path string
}

// listLogs returns the logs in dir by generation.
func listLogs(dir string) ([]logFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []logFile
	for _, e := range ents {
		if g, ok := snapshot.ParseLogName(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, logFile{g, filepath.Join(dir, e.Name())})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gen < out[j].gen })
	return out, nil
}

// load reads the snapshot and replays the logs that follow it, with the
// clock stopped so that nothing expires half way. It returns the path of
// the newest log and the end of its valid part, for appending.
func (p *persister) load() (lastLog string, lastEnd int64, err error) {
	ks := p.srv.ks
	// Loading keys allocates almost only live data, so a collection finds
	// little garbage: the collector is off while the snapshot or the RDB
	// file is read (the memory limit maxmemory sets still makes it run
	// when reached), then runs less often than the server's target while
	// the logs, whose commands leave garbage, replay.
	gc := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(gc)
	replayGC := gc
	if gc >= 0 {
		replayGC = max(gc, 200)
	}
	// Loading decodes and inserts at once (snapshot.Load): let it use every
	// core, whatever --procs asks for serving.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(runtime.NumCPU()))
	now := ks.Now
	ks.Now = func() int64 { return 1 }
	defer func() { ks.Now = now }()

	path := filepath.Join(p.dir, snapshot.SnapshotName)
	var gen uint64
	haveSnap, withLog := true, false
	h, loaded, _, err := snapshot.LoadWith(path, ks, snapshot.Hooks{Mark: p.restoreMark, History: p.restoreHistory, Function: p.restoreFunction}, 0, true)
	switch {
	case errors.Is(err, snapshot.ErrNotExist):
		haveSnap = false
	case err != nil:
		return "", 0, err
	default:
		gen, withLog = h.Generation, h.WithLog
		p.loadedKeys = loaded
	}
	if err := discardUnbased(p.dir, haveSnap, gen); err != nil {
		return "", 0, err
	}
	logs, err := listLogs(p.dir)
	if err != nil {
		return "", 0, err
	}
	if !haveSnap {
		// A Redis RDB file is the initial state of a directory that has
		// no snapshot yet: the one the base file names (its logs follow
		// it), or at a first start --dbfilename's.
		base, err := os.ReadFile(filepath.Join(p.dir, rdbBaseName))
		switch {
		case err == nil:
			err = p.loadRDB(strings.TrimSuffix(string(base), "\n"), true)
		case errors.Is(err, os.ErrNotExist) && len(logs) == 0:
			err = p.loadRDB(p.srv.Config().DBFilename, false)
		case errors.Is(err, os.ErrNotExist):
			err = nil
		}
		if err != nil {
			return "", 0, err
		}
	}
	debug.SetGCPercent(replayGC)
	var follow []logFile
	for _, lf := range logs {
		if lf.gen >= gen {
			follow = append(follow, lf)
		}
	}
	if withLog && len(follow) == 0 {
		// As Redis refuses to start when a file its manifest names is
		// missing: starting would silently drop acknowledged writes.
		missing := filepath.Join(p.dir, snapshot.LogName(gen))
		return "", 0, fmt.Errorf("%s is missing: %s (generation %d) was saved with it and it holds every write acknowledged since; restore it, or run \"recached check --fix %s\" to create it empty and start without those writes", missing, snapshot.SnapshotName, gen, missing)
	}
	if len(follow) > 0 {
		first := follow[0].gen
		if haveSnap && first != gen {
			return "", 0, fmt.Errorf("%s: the snapshot %s is of generation %d but the oldest log that follows it is %s: the log of generation %d is missing", p.dir, snapshot.SnapshotName, gen, filepath.Base(follow[0].path), gen)
		}
		if !haveSnap && first != 0 {
			return "", 0, fmt.Errorf("%s: %s follows the snapshot of generation %d, but %s is missing", p.dir, filepath.Base(follow[0].path), first, snapshot.SnapshotName)
		}
		for i, lf := range follow {
			if lf.gen != first+uint64(i) {
				return "", 0, fmt.Errorf("%s: the log of generation %d is missing (found %s)", p.dir, first+uint64(i), filepath.Base(lf.path))
			}
		}
		gen = follow[0].gen
		for _, lf := range follow {
			end, err := p.replay(lf)
			if err != nil {
				return "", 0, err
			}
			lastLog, lastEnd, gen = lf.path, end, lf.gen
		}
	}
	p.gen.Store(gen)
	ks.Now = now
	// Keys whose time ran out while the server was down go now, before
	// anything can see them.
	var expired int64
	for _, db := range ks.DBs {
		for i := 0; i < keyspace.NumShards; i++ {
			_, n := db.ExpireSample(i, math.MaxInt)
			expired += int64(n)
		}
	}
	p.loadExpired = expired
	p.srv.pubsub.hist.loaded(time.Now())
	p.loadedKeys = 0
	for _, db := range ks.DBs {
		for i := 0; i < keyspace.NumShards; i++ {
			p.loadedKeys += int64(db.Len(i))
		}
	}
	return lastLog, lastEnd, nil
}

// replay runs every record of one log through an internal session. A
// record cut short at the end (a crash in the middle of a write) ends the
// log with a warning; any other damage stops the start.
func (p *persister) replay(lf logFile) (int64, error) {
	r, f, err := snapshot.OpenLog(lf.path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if h := r.Header(); h.Generation != lf.gen {
		return 0, fmt.Errorf("%s: the header says generation %d, the file name %d", lf.path, h.Generation, lf.gen)
	}
	rp := &replayer{p: p, path: lf.path, s: newSession(p.srv, nil, false), units: map[uint64]*replayUnit{}}
	rp.s.authed = true
	defer rp.s.release()
	for {
		off := r.ValidEnd()
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
		p.logRecordsLoaded++
		if err := rp.record(rec, off); err != nil {
			return 0, err
		}
	}
	if rp.pending != nil && !r.Truncated {
		// A mark at the clean end of the log: a wrapped command that
		// changed nothing.
		p.restoreMark(*rp.pending)
	}
	if r.Truncated {
		log.Printf("recached: WARNING: %s ends with a record cut short at byte offset %d (a crash in the middle of a write): it is ignored and the log will be cut there", lf.path, r.ValidEnd())
	}
	if n := len(rp.units); n > 0 {
		effects := 0
		for _, u := range rp.units {
			effects += len(u.recs)
		}
		log.Printf("recached: WARNING: %s holds %d transaction(s) (EXEC, script or DEDUP write) without an end, cut by a crash before they were acknowledged: their %d effects are not applied", lf.path, n, effects)
	}
	return r.ValidEnd(), nil
}

// replayer applies one log's records in order (persister.replay).
type replayer struct {
	p    *persister
	path string
	s    *Session
	// pending is a DEDUP mark read just before the change made under it.
	// It is restored only once a later record is whole: a crash between
	// the two must not leave the mark without its write, or the client's
	// replay of that write would be answered +DUP and lost. A mark whose
	// change opens a transaction waits for the transaction's end.
	pending *snapshot.Marks
	// units are the transactions begun and not yet ended, by number
	// (persist_unit.go).
	units map[uint64]*replayUnit
}

// replayUnit is a transaction read so far: its effects, copied out of the
// reader's buffer, and the mark that came with them.
type replayUnit struct {
	recs []replayRec
	mark *snapshot.Marks
}

type replayRec struct {
	db   int
	args [][]byte
	off  int64
}

// record applies (or, within a transaction, keeps) one record read at
// byte offset off.
func (rp *replayer) record(rec *snapshot.LogRecord, off int64) error {
	if rec.Unit != 0 && !rec.IsUnitEnd {
		if rec.Unit > rp.p.units.Load() {
			rp.p.units.Store(rec.Unit)
		}
		u := rp.units[rec.Unit]
		if u == nil {
			u = &replayUnit{}
			rp.units[rec.Unit] = u
		}
		if rp.pending != nil {
			u.mark, rp.pending = rp.pending, nil
		}
		args := make([][]byte, len(rec.Args))
		for i, a := range rec.Args {
			args[i] = append([]byte(nil), a...)
		}
		u.recs = append(u.recs, replayRec{db: rec.DB, args: args, off: off})
		return nil
	}
	if rp.pending != nil {
		rp.p.restoreMark(*rp.pending)
		rp.pending = nil
	}
	switch {
	case rec.IsMark:
		m := rec.Mark
		rp.pending = &m
	case rec.IsHistory:
		rp.p.restoreHistory(rec.History)
	case rec.IsUnitEnd:
		u := rp.units[rec.Unit]
		delete(rp.units, rec.Unit)
		if u == nil {
			return nil // a transaction whose effects went to an earlier log
		}
		for _, r := range u.recs {
			if err := rp.apply(r.db, r.args, r.off); err != nil {
				return err
			}
		}
		if u.mark != nil {
			rp.p.restoreMark(*u.mark)
		}
	default:
		return rp.apply(rec.DB, rec.Args, off)
	}
	return nil
}

// apply runs one effect read at byte offset off.
func (rp *replayer) apply(db int, args [][]byte, off int64) error {
	s := rp.s
	if db >= len(rp.p.srv.ks.DBs) {
		return fmt.Errorf("%s: record at byte offset %d is for database %d but the server has %d databases (--databases)", rp.path, off, db, len(rp.p.srv.ks.DBs))
	}
	if db != s.DBIndex {
		s.selectDB(db)
	}
	s.Exec(args)
	if len(s.W.B) > 0 && s.W.B[0] == '-' {
		return fmt.Errorf("%s: replaying the record at byte offset %d (%.64q) failed: %s", rp.path, off, args[0], trimCRLF(s.W.B[1:]))
	}
	s.W.B = s.W.B[:0]
	return nil
}

func trimCRLF(b []byte) string {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return string(b)
}

// ClosePersistence stops the background work, waits for a running save,
// writes the shutdown snapshot unless SHUTDOWN NOSAVE asked otherwise (as
// Redis: when save rules are set or the log is on, or on SHUTDOWN SAVE) and
// closes the log. Call it after the transports have stopped.
func (srv *Server) ClosePersistence() error {
	p := srv.persist
	if !p.open {
		return nil
	}
	close(p.stop)
	p.wg.Wait()
	defer p.unlock()
	rules, _ := ParseSaveRules(srv.Config().Save)
	mode := p.shutdown.Load()
	var err error
	if mode == shutdownSave || mode == shutdownDefault && (len(rules) > 0 || p.log.Load() != nil) {
		log.Printf("recached: saving the final snapshot")
		start := time.Now()
		if err = p.save(saveRDB); err != nil {
			err = fmt.Errorf("final snapshot: %w", err)
		} else {
			log.Printf("recached: snapshot saved in %v", time.Since(start).Round(time.Millisecond))
		}
	}
	if l := p.log.Load(); l != nil {
		if cerr := l.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing the append-only log: %w", cerr)
		}
	}
	p.open = false
	return err
}

// background fsyncs the log every second (everysec), retries failed
// writes, applies the save rules and rewrites the log when it has grown.
func (p *persister) background() {
	defer p.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		if l := p.log.Load(); l != nil {
			switch l.Policy() {
			case snapshot.FsyncEverysec:
				if err := l.SyncNow(); err != nil {
					log.Printf("recached: append-only log fsync failed: %v", err)
				}
			default:
				l.Commit()
			}
		}
		p.cron(time.Now().Unix())
	}
}

// cron starts the saves that are due: scheduled ones, the save rules and
// the automatic log rewrite.
func (p *persister) cron(now int64) {
	if p.kind.Load() != saveNone {
		return
	}
	switch {
	case p.rewriteScheduled.Load():
		p.startBackground(saveRewrite)
		return
	case p.bgsaveScheduled.Load():
		p.startBackground(saveRDB)
		return
	}
	rules, _ := ParseSaveRules(p.srv.Config().Save)
	dirty := p.srv.dirty.Load()
	for _, r := range rules {
		if dirty >= r[1] && now-p.srv.lastSave.Load() > r[0] &&
			(p.lastRDBOK.Load() || now-p.lastTry.Load() > bgsaveRetryDelay) {
			log.Printf("recached: %d changes in %d seconds. Saving...", r[1], r[0])
			p.startBackground(saveRDB)
			return
		}
	}
	if l := p.log.Load(); l != nil {
		size, base := l.Size(), p.rewriteBase.Load()
		if size >= p.rewriteMin && size >= 2*base {
			log.Printf("recached: starting automatic rewriting of the append-only log: %d bytes, %d after the last rewrite", size, base)
			p.startBackground(saveRewrite)
		}
	}
}

// startBackground starts a background save of the given kind unless one
// is running. It reports whether it started one.
func (p *persister) startBackground(kind int32) bool {
	if !p.claim(kind, false) {
		return false
	}
	if kind == saveRewrite {
		p.rewriteScheduled.Store(false)
	} else {
		p.bgsaveScheduled.Store(false)
	}
	p.lastTry.Store(time.Now().Unix())
	go func() {
		start := time.Now()
		err := p.saveLocked(kind, false)
		if err != nil {
			log.Printf("recached: background save failed: %v", err)
		} else {
			log.Printf("recached: background save done in %v", time.Since(start).Round(time.Millisecond))
		}
	}()
	return true
}

// save runs a save of the given kind in the calling goroutine, after any
// running one.
func (p *persister) save(kind int32) error {
	p.claim(kind, true)
	return p.saveLocked(kind, false)
}

// claim makes kind the save in progress. When another save runs, it waits
// for that one to end if wait is set, and otherwise reports false.
func (p *persister) claim(kind int32, wait bool) bool {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	for p.kind.Load() != saveNone {
		if !wait {
			return false
		}
		p.idle.Wait()
	}
	p.kind.Store(kind)
	return true
}

// release ends the save in progress and wakes the saves waiting for it.
func (p *persister) release() {
	p.idleMu.Lock()
	p.kind.Store(saveNone)
	p.idleMu.Unlock()
	p.idle.Broadcast()
}

// saveLocked writes a snapshot and, when the log is on, starts the log of
// the next generation at the snapshot's point in time. With enable (the
// log is off: CONFIG SET appendonly yes), it turns the log on at that
// point instead, with the next generation's log, the snapshot being its
// base; until that snapshot commits, the switch file makes a restart
// discard that log (see enableLog). The caller has claimed the save
// (claim); saveLocked releases it.
func (p *persister) saveLocked(kind int32, enable bool) (err error) {
	start := time.Now()
	p.saveStart.Store(start.Unix())
	defer func() {
		secs := int64(time.Since(start).Round(time.Second) / time.Second)
		if kind == saveRewrite {
			p.lastRewriteOK.Store(err == nil)
			p.lastRewriteSecs.Store(secs)
			if err == nil {
				p.rewrites.Add(1)
				p.rewriteFailures.Store(0)
			} else {
				p.rewriteFailures.Add(1)
			}
		} else {
			p.lastRDBOK.Store(err == nil)
			p.lastRDBSecs.Store(secs)
		}
		// Redis counts both kinds of save as one more rdb_saves when they
		// write a snapshot, which every save here does.
		if err == nil {
			p.rdbSaves.Add(1)
		}
		if enable && err != nil {
			p.abortEnable()
		}
		p.release()
	}()
	srv := p.srv
	dir := p.dir
	if dir == "" {
		dir = srv.Config().Dir
		if dir == "" {
			dir = "."
		}
	}
	gen := p.gen.Load() + 1
	hdr := snapshot.Header{Version: snapshot.Version, Generation: gen, Created: time.Now().UnixMilli()}
	var next *os.File
	var nextSize int64
	cur := p.log.Load() // stable: it changes only under a claimed save
	if enable {
		if err := writeSwitchFile(dir, gen); err != nil {
			return err
		}
	}
	if cur != nil || enable {
		if next, nextSize, err = snapshot.CreateLog(dir, hdr); err != nil {
			return err
		}
	}
	// The snapshot's header carries each database's key count, a hint
	// for sizing the maps when it is loaded.
	snapHdr := hdr
	snapHdr.WithLog = next != nil
	for _, db := range srv.ks.DBs {
		n := 0
		for i := 0; i < keyspace.NumShards; i++ {
			sh := db.Shard(i)
			sh.Lock()
			n += db.Len(i)
			sh.Unlock()
		}
		snapHdr.Keys = append(snapHdr.Keys, int64(n))
	}
	w, err := snapshot.Create(dir, snapHdr)
	if err != nil {
		if next != nil {
			next.Close()
			os.Remove(filepath.Join(dir, snapshot.LogName(gen)))
		}
		return err
	}
	st := newSnapState(srv.ks, w)
	if kind == saveRDB && srv.Config().SnapshotFormat == "rdb" {
		if st.rdb, err = newRDBSink(rdbPath(dir, srv.Config())); err != nil {
			w.Abort()
			if next != nil {
				next.Close()
				os.Remove(filepath.Join(dir, snapshot.LogName(gen)))
			}
			return err
		}
		defer st.rdb.abort() // after a commit, a no-op
	}
	var marks []snapshot.Marks
	srv.lockAll(srv.ks.DBs...)
	// The channel history at the snapshot's instant: with every stripe
	// locked no message is being recorded, so each one is either in the
	// copy or, recorded after the switch, in the new log.
	srv.pubsub.hist.lockAll()
	var old *os.File
	if enable {
		// The switch point: every effect from here on is logged, every
		// earlier one is in the image the dumper writes.
		policy, _ := snapshot.ParseFsync(srv.Config().AppendFsync)
		cur = p.newLogWriter(next, nextSize, policy)
		p.log.Store(cur)
	} else if next != nil {
		old, err = cur.BeginSwitch(next, nextSize)
		if err != nil {
			srv.pubsub.hist.unlockAll()
			srv.unlockAll(srv.ks.DBs...)
			w.Abort()
			next.Close()
			os.Remove(filepath.Join(dir, snapshot.LogName(gen)))
			return err
		}
	}
	// The function libraries as of the snapshot's instant: they change
	// only with every shard locked, as now.
	libs := srv.scripts.sortedLibs()
	if st.rdb != nil {
		st.err = st.rdb.functions(libs)
	}
	hist := srv.pubsub.hist.copyLocked()
	srv.pubsub.hist.unlockAll()
	defer srv.pubsub.hist.releaseViews()
	p.snap.Store(st)
	dirty := srv.dirty.Load()
	for _, m := range srv.dedup.Marks() {
		marks = append(marks, snapshot.Marks{ClientID: m.ClientID, High: m.High, LastSeen: m.LastSeen})
	}
	total := int64(0)
	for _, db := range srv.ks.DBs {
		for i := 0; i < keyspace.NumShards; i++ {
			total += int64(db.Len(i))
		}
	}
	srv.unlockAll(srv.ks.DBs...)
	p.keysTotal.Store(total)
	p.keysDone.Store(0)
	if next != nil {
		p.gen.Store(gen)
		if old != nil {
			if err := cur.FinishSwitch(old); err != nil {
				log.Printf("recached: WARNING: fsync of the previous append-only log failed: %v", err)
			}
		}
		// What the new log holds so far reaches the disk before the
		// snapshot replaces the generation before it.
		if err := cur.SyncNow(); err != nil {
			p.snap.Store(nil)
			close(st.done)
			w.Abort()
			return fmt.Errorf("sync the new append-only log: %w", err)
		}
	}
	err = st.run(p)
	p.snap.Store(nil)
	close(st.done)
	for _, m := range marks {
		if err == nil {
			err = w.Mark(m)
		}
	}
	for _, lib := range libs {
		if err == nil {
			err = w.Function(lib.code)
		}
	}
	for _, v := range hist {
		eachRecord(v.name, v.records, func(r *snapshot.History) {
			if err == nil {
				err = w.History(r)
			}
		})
	}
	if err != nil {
		w.Abort()
		return err
	}
	if err := w.Commit(); err != nil {
		return err
	}
	// The snapshot now holds what a Redis RDB file started the directory
	// with.
	if os.Remove(filepath.Join(dir, rdbBaseName)) == nil {
		_ = snapshot.SyncDir(dir)
	}
	p.gen.Store(gen)
	srv.dirty.Add(-dirty)
	if st.rdb != nil {
		if err := st.rdb.commit(); err != nil {
			return fmt.Errorf("writing the RDB file %s: %w", st.rdb.path, err)
		}
	}
	srv.lastSave.Store(time.Now().Unix())
	if enable {
		// The base is in place: the new log now follows it for good. A
		// switch file left behind is harmless: the snapshot is not older.
		if err := removeSwitchFile(dir); err != nil {
			log.Printf("recached: WARNING: %v", err)
		}
	}
	if cur != nil {
		p.rewriteBase.Store(cur.Size())
	}
	// The new snapshot holds everything the older logs did.
	if logs, lerr := listLogs(dir); lerr == nil {
		removed := false
		for _, lf := range logs {
			if lf.gen < gen {
				if os.Remove(lf.path) == nil {
					removed = true
				}
			}
		}
		if removed {
			_ = snapshot.SyncDir(dir)
		}
	}
	return nil
}

// snapState is one save in progress: which shards are dumped, the
// pre-images of keys changed since the save started, and the writer (nil
// when only rdb is written: a replica's image, repl_primary.go).
type snapState struct {
	ks     *keyspace.Keyspace
	shards [][keyspace.NumShards]shardSnap
	done   chan struct{}

	mu  sync.Mutex // guards w, err and key; lock order: see server/LOCKS.md
	w   *snapshot.Writer
	err error
	key []byte
	// rdb, when not nil, writes the same image as a Redis RDB file
	// (--snapshot-format rdb).
	rdb *rdbSink
}

// shardSnap is one shard's part of a save. It is guarded by the shard's
// lock.
type shardSnap struct {
	dumped bool
	// pre maps a key changed since the save started to its record as of
	// then; a nil record means the key did not exist.
	pre map[string][]byte
	// preRDB holds the same pre-images as RDB records when the save also
	// writes an RDB file.
	preRDB map[string][]byte
}

func newSnapState(ks *keyspace.Keyspace, w *snapshot.Writer) *snapState {
	return &snapState{
		ks:     ks,
		shards: make([][keyspace.NumShards]shardSnap, len(ks.DBs)),
		done:   make(chan struct{}),
		w:      w,
	}
}

// run dumps every shard not dumped yet, locking one at a time. It walks
// each database's shards from the last to the first, against the order in
// which commands lock several (lockAll): a command that needs every shard
// then waits for one shard's dump at most. Walking the same way, the save
// would take the next shard before the command reached it, again and
// again, and DBSIZE after a start on a Redis file waited for the whole
// save.
func (st *snapState) run(p *persister) error {
	for dbi, db := range st.ks.DBs {
		for i := keyspace.NumShards - 1; i >= 0; i-- {
			sh := db.Shard(i)
			sh.Lock()
			st.dumpShard(dbi, i)
			sh.Unlock()
			if st.w != nil {
				st.mu.Lock()
				p.keysDone.Store(int64(st.w.Keys()))
				st.mu.Unlock()
			}
			if p.dumpHook != nil {
				p.dumpHook(dbi, i)
			}
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.err
}

// dumpShard writes one shard's image. The caller holds the shard's lock.
func (st *snapState) dumpShard(dbi, i int) {
	ss := &st.shards[dbi][i]
	if ss.dumped {
		return
	}
	ss.dumped = true
	pre, preRDB := ss.pre, ss.preRDB
	ss.pre, ss.preRDB = nil, nil
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err != nil {
		return
	}
	db := st.ks.DBs[dbi]
	var err error
	db.Range(i, func(k string, e *keyspace.Entry) bool {
		if rec, ok := pre[k]; ok {
			if rec != nil {
				if st.w != nil {
					err = st.w.Raw(dbi, rec)
				}
				if err == nil && st.rdb != nil {
					err = st.rdb.raw(dbi, preRDB[k])
				}
			}
			return err == nil
		}
		st.key = append(st.key[:0], k...)
		var exp int64
		if e.HasExpiry() {
			exp, _ = db.Expiry(st.key)
		}
		if st.w != nil {
			err = st.w.Key(dbi, st.key, e, exp)
		}
		if err == nil && st.rdb != nil {
			err = st.rdb.key(dbi, st.key, e, exp)
		}
		return err == nil
	})
	for k, rec := range pre {
		if err != nil {
			break
		}
		if rec != nil && db.Peek([]byte(k)) == nil {
			if st.w != nil {
				err = st.w.Raw(dbi, rec)
			}
			if err == nil && st.rdb != nil {
				err = st.rdb.raw(dbi, preRDB[k])
			}
		}
	}
	st.err = err
}

// preimage keeps key's record as of the start of the save, before a
// command changes it. The caller holds the key's shard lock.
func (st *snapState) preimage(dbi int, key []byte) {
	ss := &st.shards[dbi][st.ks.ShardOf(key)]
	if ss.dumped {
		return
	}
	if _, ok := ss.pre[string(key)]; ok {
		return
	}
	db := st.ks.DBs[dbi]
	var rec, rrec []byte
	if e := db.Peek(key); e != nil {
		exp, _ := db.Expiry(key)
		var err error
		rec, err = snapshot.AppendKey(nil, key, e, exp)
		if err == nil && st.rdb != nil {
			rrec, err = rdbRecord(key, e, exp)
		}
		if err != nil {
			st.mu.Lock()
			if st.err == nil {
				st.err = err
			}
			st.mu.Unlock()
			return
		}
	}
	if ss.pre == nil {
		ss.pre = make(map[string][]byte)
	}
	ss.pre[string(key)] = rec
	if st.rdb != nil {
		if ss.preRDB == nil {
			ss.preRDB = make(map[string][]byte)
		}
		ss.preRDB[string(key)] = rrec
	}
}

// beforeWrite runs before every write command, with its shards locked. It
// refuses writes the log cannot record, and during a save keeps the
// pre-images the snapshot needs. It reports whether the command may run.
func (p *persister) beforeWrite(s *Session, cmd *Command) bool {
	if l := p.log.Load(); l != nil && l.Err() != nil {
		s.reject(cmd, "MISCONF Errors writing to the AOF file: "+l.Err().Error())
		return false
	}
	st := p.snap.Load()
	if st == nil {
		return true
	}
	switch {
	case cmd.HasKeys():
		s.keys = cmd.KeyArgs(s.keys[:0], s.Args)
		if cmd.Flags&FlagAllDBs != 0 {
			// COPY and MOVE write a key of another database: their
			// keys are kept in every database, all of which are locked.
			for dbi := range st.shards {
				for _, k := range s.keys {
					st.preimage(dbi, k)
				}
			}
		} else {
			for _, k := range s.keys {
				st.preimage(s.DBIndex, k)
			}
		}
	case cmd.Flags&FlagAllDBs != 0:
		// FLUSHALL, SWAPDB: every shard is locked; dump what is left
		// before the command changes it.
		for dbi := range st.shards {
			for i := 0; i < keyspace.NumShards; i++ {
				st.dumpShard(dbi, i)
			}
		}
	case cmd.Flags&FlagAllKeys != 0:
		for i := 0; i < keyspace.NumShards; i++ {
			st.dumpShard(s.DBIndex, i)
		}
	case !s.inExec:
		// A write with no declared keys holds no lock: let the save
		// finish first.
		<-st.done
	}
	return true
}

// info returns the INFO persistence fields, in Redis's order.
func (p *persister) info() [][2]string {
	srv := p.srv
	now := time.Now().Unix()
	kind := p.kind.Load()
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	okErr := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "err"
	}
	cur := int64(-1)
	if kind != saveNone {
		cur = now - p.saveStart.Load()
	}
	rdbCur, rewriteCur := int64(-1), int64(-1)
	processed, total := int64(0), int64(0)
	switch kind {
	case saveRDB:
		rdbCur = cur
	case saveRewrite:
		rewriteCur = cur
	}
	if kind != saveNone {
		processed, total = p.keysDone.Load(), p.keysTotal.Load()
	}
	writeStatus := "ok"
	lw := p.log.Load()
	if lw != nil && lw.Err() != nil {
		writeStatus = "err"
	}
	out := [][2]string{
		{"loading", "0"}, {"async_loading", "0"},
		{"current_cow_peak", "0"}, {"current_cow_size", "0"}, {"current_cow_size_age", "0"}, {"current_fork_perc", "0.00"},
		{"current_save_keys_processed", itoa(processed)}, {"current_save_keys_total", itoa(total)},
		{"rdb_changes_since_last_save", itoa(srv.dirty.Load())},
		{"rdb_bgsave_in_progress", yesNoBit(kind == saveRDB)},
		{"rdb_last_save_time", itoa(srv.lastSave.Load())},
		{"rdb_last_bgsave_status", okErr(p.lastRDBOK.Load())},
		{"rdb_last_bgsave_time_sec", itoa(p.lastRDBSecs.Load())},
		{"rdb_current_bgsave_time_sec", itoa(rdbCur)},
		{"rdb_saves", itoa(p.rdbSaves.Load())},
		{"rdb_last_cow_size", "0"},
		{"rdb_last_load_keys_expired", itoa(p.loadExpired)},
		{"rdb_last_load_keys_loaded", itoa(p.loadedKeys)},
		{"aof_enabled", yesNoBit(lw != nil)},
		{"aof_rewrite_in_progress", yesNoBit(kind == saveRewrite)},
		{"aof_rewrite_scheduled", yesNoBit(p.rewriteScheduled.Load())},
		{"aof_last_rewrite_time_sec", itoa(p.lastRewriteSecs.Load())},
		{"aof_current_rewrite_time_sec", itoa(rewriteCur)},
		{"aof_last_bgrewrite_status", okErr(p.lastRewriteOK.Load())},
		{"aof_rewrites", itoa(p.rewrites.Load())},
		{"aof_rewrites_consecutive_failures", itoa(p.rewriteFailures.Load())},
		{"aof_last_write_status", writeStatus},
		{"aof_last_cow_size", "0"},
		{"module_fork_in_progress", "0"}, {"module_fork_last_cow_size", "0"},
	}
	if l := lw; l != nil {
		out = append(out,
			[2]string{"aof_current_size", itoa(l.Size())},
			[2]string{"aof_base_size", itoa(p.rewriteBase.Load())},
			[2]string{"aof_pending_rewrite", yesNoBit(p.rewriteScheduled.Load())},
			[2]string{"aof_buffer_length", itoa(l.Buffered())},
			[2]string{"aof_pending_bio_fsync", "0"},
			[2]string{"aof_delayed_fsync", "0"},
			[2]string{"recached_aof_generation", strconv.FormatUint(p.gen.Load(), 10)},
		)
	}
	return out
}

// rdbBaseName is the file that names the Redis RDB file a directory
// started with, until the first snapshot holds its keys.
const rdbBaseName = "rdb-base"

// loadRDB loads a Redis RDB file into the empty keyspace. name is the
// file (relative to the data directory unless absolute, "" for dump.rdb);
// as for redis-server, a file that is not there means an empty start.
// Unless fromBase (the base file named it, a restart before the first
// snapshot), the base file is written, naming it, before any log is
// created. Function libraries go to the function engine. Expired keys
// are kept: the sweep after the logs' replay drops them.
func (p *persister) loadRDB(name string, fromBase bool) error {
	explicit := name != ""
	if !explicit {
		name = "dump.rdb"
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.dir, name)
	}
	if _, err := os.Stat(path); err != nil {
		switch {
		case fromBase:
			return fmt.Errorf("%s names the Redis RDB file the data directory started with, which has no snapshot yet: %w", filepath.Join(p.dir, rdbBaseName), err)
		case errors.Is(err, os.ErrNotExist):
			if explicit {
				log.Printf("recached: no Redis RDB file %s (dbfilename): starting empty", path)
			}
			return nil
		}
		return fmt.Errorf("the Redis RDB file dbfilename names: %w", err)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	st, err := rdb.Load(path, p.srv.ks, time.Now().UnixMilli(), true)
	if err != nil {
		return err
	}
	for _, code := range st.Functions {
		if _, msg := p.srv.scripts.loadLibrary(code, true); msg != "" {
			return fmt.Errorf("%s: a function library does not load: %s", path, msg)
		}
	}
	for _, n := range st.Notes {
		log.Printf("recached: %s: %s", path, n)
	}
	log.Printf("recached: loaded the Redis RDB file %s (version %d): %d keys, %d function libraries", path, st.Version, st.Loaded, len(st.Functions))
	p.fromRDB = path
	if fromBase {
		return nil
	}
	base := filepath.Join(p.dir, rdbBaseName)
	f, err := os.Create(base)
	if err == nil {
		_, err = f.WriteString(path + "\n")
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = snapshot.SyncDir(p.dir)
	}
	if err != nil {
		return fmt.Errorf("recording the Redis RDB file the directory starts with: %w", err)
	}
	return nil
}

// LoadedRDB returns the Redis RDB file the start loaded, "" for none.
func (srv *Server) LoadedRDB() string { return srv.persist.fromRDB }

// restoreFunction loads a function library of the snapshot at start.
func (p *persister) restoreFunction(code string) error {
	if _, msg := p.srv.scripts.loadLibrary(code, true); msg != "" {
		return fmt.Errorf("a function library does not load: %s", msg)
	}
	return nil
}

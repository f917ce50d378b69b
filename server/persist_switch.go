package server

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/recached/recached/snapshot"
)

// applyFsync makes CONFIG SET appendfsync take effect on the open log, as
// Redis's does from the next write on: under always, the next batch's
// Commit fsyncs everything appended so far before its replies leave. With
// the log off the value waits in the configuration. The caller holds
// cfgMu.
func (p *persister) applyFsync() {
	l := p.log.Load()
	if l == nil {
		return
	}
	if policy, err := snapshot.ParseFsync(p.srv.cfg.AppendFsync); err == nil {
		l.SetPolicy(policy)
	}
}

// CONFIG SET appendonly (Redis's startAppendOnly and stopAppendOnly).
//
// Turning the log on is a save (saveLocked with enable) that creates the
// log of the next generation and, at the instant it marks with every
// shard locked, makes it the open log: every later effect is logged, and
// the snapshot it writes, the state at that instant, is the log's base.
// CONFIG SET answers once that snapshot is committed, so that every write
// acknowledged after its OK is in the base or the log. Before the
// snapshot commits the files on disk are the old snapshot (without the
// unlogged writes since it) and a log that starts later: they do not fit
// together. The switch file, written before the log is created and
// removed once the snapshot is committed, names that log's generation;
// a start that finds it with an older snapshot discards the logs from
// that generation on, as Redis discards the incremental file of a rewrite
// that did not finish, and loads what was durable before the switch.
//
// Turning it off writes, fsyncs and closes the log at an instant taken
// with every shard locked: the snapshot and the logs on disk then hold
// every write up to that instant, and later writes are only in memory
// until the next save.

// switchName is the switch file of a log being turned on.
const switchName = "aof-switch"

// writeSwitchFile durably records that the log of generation gen is being
// turned on and has no base yet.
func writeSwitchFile(dir string, gen uint64) error {
	path := filepath.Join(dir, switchName)
	err := os.WriteFile(path, []byte(strconv.FormatUint(gen, 10)+"\n"), 0o644)
	if err == nil {
		err = syncFile(path)
	}
	if err == nil {
		err = snapshot.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("recording the switch to the append-only log: %w", err)
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeSwitchFile removes the switch file once the log has its base.
func removeSwitchFile(dir string) error {
	err := os.Remove(filepath.Join(dir, switchName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = snapshot.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("removing %s: %w", switchName, err)
	}
	return nil
}

// discardUnbased handles the switch file in dir: when the snapshot
// (generation snapGen, haveSnap false for none) is older than the log it
// names, that log and any later one have no base and are removed. The
// switch file is then removed.
func discardUnbased(dir string, haveSnap bool, snapGen uint64) error {
	path := filepath.Join(dir, switchName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	gen, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return fmt.Errorf("%s: not a generation: %q", path, b)
	}
	if !haveSnap || snapGen < gen {
		logs, err := listLogs(dir)
		if err != nil {
			return err
		}
		for _, lf := range logs {
			if lf.gen < gen {
				continue
			}
			log.Printf("recached: WARNING: %s was started by CONFIG SET appendonly yes, whose base snapshot was never completed: it is discarded, the data is as of before the switch", lf.path)
			if err := os.Remove(lf.path); err != nil {
				return err
			}
		}
	}
	return removeSwitchFile(dir)
}

// applyAppendOnly turns the log on or off as appendonly now says (CONFIG
// SET appendonly), after any running save. The value is read once the save
// is claimed, so that of two CONFIG SETs racing the last one set wins. It
// must not be called with a shard lock or cfgMu held.
func (p *persister) applyAppendOnly() error {
	if !p.open {
		return nil // at start: OpenPersistence reads the configuration
	}
	p.claim(saveSwitch, true)
	on := p.srv.Config().AppendOnly
	switch {
	case on == (p.log.Load() != nil):
		p.release()
		return nil
	case on:
		// INFO shows the base being written as a rewrite.
		p.idleMu.Lock()
		p.kind.Store(saveRewrite)
		p.idleMu.Unlock()
		return p.saveLocked(saveRewrite, true)
	}
	defer p.release()
	return p.closeLog()
}

// closeLog turns the log off at an instant taken with every shard and
// history stripe locked, then writes, fsyncs and closes it. The caller
// has claimed a save.
func (p *persister) closeLog() error {
	srv := p.srv
	srv.lockAll(srv.ks.DBs...)
	srv.pubsub.hist.lockAll()
	l := p.log.Swap(nil)
	srv.pubsub.hist.unlockAll()
	srv.unlockAll(srv.ks.DBs...)
	if l == nil {
		return nil
	}
	if err := l.Close(); err != nil {
		return fmt.Errorf("closing the append-only log: %w", err)
	}
	return nil
}

// abortEnable undoes a failed switch to the log: the log is closed and,
// having no base, removed with the switch file.
func (p *persister) abortEnable() {
	if err := p.closeLog(); err != nil {
		log.Printf("recached: %v", err)
	}
	dir := p.dir
	if dir == "" {
		dir = "."
	}
	if err := discardUnbased(dir, false, 0); err != nil {
		log.Printf("recached: undoing the switch to the append-only log: %v", err)
	}
}

package server

import "github.com/recached/recached/snapshot"

// applyFsync makes CONFIG SET appendfsync take effect on the open log, as
// Redis's does from the next write on: under always, the next batch's
// Commit fsyncs everything appended so far before its replies leave. With
// the log off the value waits in the configuration. The caller holds
// cfgMu.
func (p *persister) applyFsync() {
	if p.log == nil {
		return
	}
	if policy, err := snapshot.ParseFsync(p.srv.cfg.AppendFsync); err == nil {
		p.log.SetPolicy(policy)
	}
}

package server

import (
	"strings"

	"github.com/recached/recached/resp"
)

// cmdClientTracking is CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p]...
// [BCAST] [OPTIN] [OPTOUT] [NOLOOP], with Redis's checks and errors.
func cmdClientTracking(s *Session) {
	tr := &tracker{}
	for i := 3; i < len(s.Args); i++ {
		more := i+1 < len(s.Args)
		switch opt := strings.ToLower(string(s.Args[i])); {
		case opt == "redirect" && more:
			i++
			if tr.redirect != 0 {
				s.W.Error("ERR A client can only redirect to a single other client")
				return
			}
			id, ok := resp.ParseInt(s.Args[i])
			if !ok {
				s.W.Error(errNotInt)
				return
			}
			if s.srv.clientByID(id) == nil {
				s.W.Error("ERR The client ID you want redirect to does not exist")
				return
			}
			tr.redirect = id
		case opt == "bcast":
			tr.bcast = true
		case opt == "optin":
			tr.optin = true
		case opt == "optout":
			tr.optout = true
		case opt == "noloop":
			tr.noloop = true
		case opt == "prefix" && more:
			i++
			tr.prefixes = append(tr.prefixes, string(s.Args[i]))
		default:
			s.W.Error(errSyntax)
			return
		}
	}
	switch strings.ToLower(string(s.Args[2])) {
	case "on":
		old := s.trk.Load()
		switch {
		case !tr.bcast && len(tr.prefixes) > 0:
			s.W.Error("ERR PREFIX option requires BCAST mode to be enabled")
		case old != nil && old.bcast != tr.bcast:
			s.W.Error("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
		case tr.bcast && (tr.optin || tr.optout):
			s.W.Error("ERR OPTIN and OPTOUT are not compatible with BCAST")
		case tr.optin && tr.optout:
			s.W.Error("ERR You can't specify both OPTIN mode and OPTOUT mode")
		case old != nil && (tr.optin && old.optout || tr.optout && old.optin):
			s.W.Error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
		default:
			if tr.bcast {
				var have []string
				if old != nil {
					have = old.prefixes
				}
				if msg := prefixCollision(have, tr.prefixes); msg != "" {
					s.W.Error(msg)
					return
				}
			}
			s.srv.enableTracking(s, tr)
			s.W.OK()
		}
	case "off":
		s.srv.disableTracking(s)
		s.W.OK()
	default:
		s.W.Error(errSyntax)
	}
}

// prefixCollision returns Redis's error when one of the new BCAST prefixes
// is a prefix of, or has as prefix, one the client has or another new one:
// both would report the same keys.
func prefixCollision(have, add []string) string {
	overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	for i, p := range add {
		for _, h := range have {
			if overlap(p, h) {
				return "ERR Prefix '" + p + "' overlaps with an existing prefix '" + h + "'. Prefixes for a single client must not overlap."
			}
		}
		for _, q := range add[i+1:] {
			if overlap(p, q) {
				return "ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap."
			}
		}
	}
	return ""
}

// cmdClientCaching is CLIENT CACHING YES|NO: whether the next command's
// keys are tracked in OPTIN (YES) or OPTOUT (NO) mode.
func cmdClientCaching(s *Session) {
	tr := s.trk.Load()
	if tr == nil || !tr.optin && !tr.optout {
		s.W.Error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch strings.ToLower(string(s.Args[2])) {
	case "yes":
		if !tr.optin {
			s.W.Error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
	case "no":
		if !tr.optout {
			s.W.Error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
	default:
		s.W.Error(errSyntax)
		return
	}
	tr.caching = true
	s.W.OK()
}

// cmdClientGetRedir is CLIENT GETREDIR: -1 when tracking is off, else the
// client invalidations go to (0: this one).
func cmdClientGetRedir(s *Session) {
	if tr := s.trk.Load(); tr != nil {
		s.W.Int(tr.redirect)
		return
	}
	s.W.Int(-1)
}

// cmdClientTrackingInfo is CLIENT TRACKINGINFO.
func cmdClientTrackingInfo(s *Session) {
	tr := s.trk.Load()
	s.W.Map(3)
	s.W.BulkString("flags")
	if tr == nil {
		s.W.Set(1)
		s.W.BulkString("off")
		s.W.BulkString("redirect")
		s.W.Int(-1)
		s.W.BulkString("prefixes")
		s.W.Array(0)
		return
	}
	flags := []string{"on"}
	for _, f := range []struct {
		on   bool
		name string
	}{{tr.bcast, "bcast"}, {tr.optin, "optin"}, {tr.optout, "optout"}, {tr.caching && tr.optin, "caching-yes"}, {tr.caching && tr.optout, "caching-no"}, {tr.noloop, "noloop"}, {tr.isBroken(), "broken_redirect"}} {
		if f.on {
			flags = append(flags, f.name)
		}
	}
	s.W.Set(len(flags))
	for _, f := range flags {
		s.W.BulkString(f)
	}
	s.W.BulkString("redirect")
	s.W.Int(tr.redirect)
	s.W.BulkString("prefixes")
	s.W.Array(len(tr.prefixes))
	for _, p := range tr.prefixes {
		s.W.BulkString(p)
	}
}

func (tr *tracker) isBroken() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.broken
}

// clientListTracking returns the CLIENT LIST flags and redir of s's
// tracking: t (tracking), B (broadcast), R (broken redirect).
func clientListTracking(s *Session) (flags string, redir int64) {
	tr := s.trk.Load()
	if tr == nil {
		return "", -1
	}
	flags = "t"
	if tr.bcast {
		flags += "B"
	}
	if tr.isBroken() {
		flags += "R"
	}
	return flags, tr.redirect
}

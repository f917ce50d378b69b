package server

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The latency monitor, as Redis's: with latency-monitor-threshold above 0,
// every event that took at least that many milliseconds (a command,
// "command" or "fast-command", or a server task) is kept, the worst one of
// each second, the last latencySamples per event. LATENCY LATEST, HISTORY,
// RESET, DOCTOR and GRAPH read them; LATENCY HISTOGRAM reads the
// per-command latency histograms of INFO latencystats (stats.go).

// latencySamples is how many samples an event keeps (Redis's
// LATENCY_TS_LEN).
const latencySamples = 160

// latencySample is the worst latency, in milliseconds, of one second.
type latencySample struct {
	at, ms int64
}

// latencyEvent is one event's time series.
type latencyEvent struct {
	samples []latencySample // oldest first, at most latencySamples
	max     int64
}

// The bits of diagState.hooks.
const (
	hookMonitor = 1 << iota // a client monitors
	hookLatency             // latency-monitor-threshold is above 0
)

// diagState is the latency monitor and DEBUG's switches.
type diagState struct {
	// hooks says which per-command diagnostics are on, in one word that
	// callLocked loads once.
	hooks atomic.Int32
	// threshold is latency-monitor-threshold in milliseconds, 0 off.
	threshold atomic.Int64
	mu        sync.Mutex
	events    map[string]*latencyEvent
	// noActiveExpire is DEBUG SET-ACTIVE-EXPIRE 0.
	noActiveExpire atomic.Bool
	// cronPaused is DEBUG PAUSE-CRON 1.
	cronPaused atomic.Bool
}

// setHook turns a bit of hooks on or off.
func (g *diagState) setHook(bit int32, on bool) {
	if on {
		g.hooks.Or(bit)
	} else {
		g.hooks.And(^bit)
	}
}

// initDiag prepares the latency monitor and makes RESET leave monitor
// mode. New calls it.
func (srv *Server) initDiag() {
	srv.diag.events = make(map[string]*latencyEvent)
	srv.resetHooks = append(srv.resetHooks, srv.unmonitor)
}

// noteLatency records that event took d, if that reaches
// latency-monitor-threshold.
func (srv *Server) noteLatency(event string, d time.Duration) {
	t := srv.diag.threshold.Load()
	ms := d.Milliseconds()
	if t == 0 || ms < t {
		return
	}
	now := time.Now().Unix()
	g := &srv.diag
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.events[event]
	if e == nil {
		e = &latencyEvent{}
		g.events[event] = e
	}
	e.max = max(e.max, ms)
	if n := len(e.samples); n > 0 && e.samples[n-1].at == now {
		e.samples[n-1].ms = max(e.samples[n-1].ms, ms)
		return
	}
	if len(e.samples) == latencySamples {
		copy(e.samples, e.samples[1:])
		e.samples = e.samples[:latencySamples-1]
	}
	e.samples = append(e.samples, latencySample{at: now, ms: ms})
}

// noteCommandLatency records a command's latency event.
func (srv *Server) noteCommandLatency(cmd *Command, d time.Duration) {
	if cmd.Flags&FlagFast != 0 {
		srv.noteLatency("fast-command", d)
	} else {
		srv.noteLatency("command", d)
	}
}

// latencyCommand is LATENCY's table row.
func latencyCommand() *Command {
	f := FlagAdmin | FlagNoScript | FlagLoading | FlagStale
	return &Command{Name: "latency", Arity: -2, Group: "server", Since: "2.8.13", Summary: "A container for latency diagnostics commands.", Categories: "slow", Subs: []*Command{
		{Name: "doctor", Arity: 2, Flags: f, Since: "2.8.13", Summary: "Returns a human-readable latency analysis report.", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdLatencyDoctor},
		{Name: "graph", Arity: 3, Flags: f, Since: "2.8.13", Syntax: "event", Summary: "Returns a latency graph for an event.", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdLatencyGraph},
		{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, Since: "2.8.13", Summary: "Returns helpful text about the different subcommands.", Complexity: "O(1)", Categories: "slow", Handler: cmdLatencyHelp},
		{Name: "histogram", Arity: -2, Flags: f, Since: "7.0.0", Syntax: "[command [command ...]]", Summary: "Returns the cumulative distribution of latencies of a subset or all commands.", Complexity: "O(N) where N is the number of commands with latency information being retrieved.", Categories: "admin slow dangerous", Handler: cmdLatencyHistogram},
		{Name: "history", Arity: 3, Flags: f, Since: "2.8.13", Syntax: "event", Summary: "Returns timestamp-latency samples for an event.", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdLatencyHistory},
		{Name: "latest", Arity: 2, Flags: f, Since: "2.8.13", Summary: "Returns the latest latency samples for all events.", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdLatencyLatest},
		{Name: "reset", Arity: -2, Flags: f, Since: "2.8.13", Syntax: "[event [event ...]]", Summary: "Resets the latency data for one or more events.", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdLatencyReset},
	}}
}

// sortedEvents returns the event names in order, under g.mu.
func (g *diagState) sortedEvents() []string {
	names := make([]string, 0, len(g.events))
	for n := range g.events {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// cmdLatencyLatest is LATENCY LATEST: per event its name, the time and
// latency of its last sample and its all-time maximum.
func cmdLatencyLatest(s *Session) {
	g := &s.srv.diag
	g.mu.Lock()
	defer g.mu.Unlock()
	names := g.sortedEvents()
	s.W.Array(len(names))
	for _, n := range names {
		e := g.events[n]
		last := e.samples[len(e.samples)-1]
		s.W.Array(4)
		s.W.BulkString(n)
		s.W.Int(last.at)
		s.W.Int(last.ms)
		s.W.Int(e.max)
	}
}

// cmdLatencyHistory is LATENCY HISTORY event: its samples, oldest first.
func cmdLatencyHistory(s *Session) {
	g := &s.srv.diag
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.events[string(s.Args[2])]
	if e == nil {
		s.W.Array(0)
		return
	}
	s.W.Array(len(e.samples))
	for _, x := range e.samples {
		s.W.Array(2)
		s.W.Int(x.at)
		s.W.Int(x.ms)
	}
}

// cmdLatencyReset is LATENCY RESET [event ...]: drops the events named,
// or all, and answers how many it dropped.
func cmdLatencyReset(s *Session) {
	g := &s.srv.diag
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	if len(s.Args) == 2 {
		n = len(g.events)
		clear(g.events)
	}
	for _, a := range s.Args[2:] {
		if _, ok := g.events[string(a)]; ok {
			delete(g.events, string(a))
			n++
		}
	}
	s.W.Int(int64(n))
}

// cmdLatencyDoctor is LATENCY DOCTOR: a report of the events seen.
func cmdLatencyDoctor(s *Session) {
	g := &s.srv.diag
	g.mu.Lock()
	defer g.mu.Unlock()
	var b strings.Builder
	switch {
	case len(g.events) == 0 && g.threshold.Load() == 0:
		b.WriteString("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n")
	case len(g.events) == 0:
		b.WriteString("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sleep tonight.\n")
	default:
		b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
		for i, n := range g.sortedEvents() {
			e := g.events[n]
			var sum int64
			for _, x := range e.samples {
				sum += x.ms
			}
			b.WriteString(strconv.Itoa(i+1) + ". " + n + ": " + strconv.Itoa(len(e.samples)) +
				" latency spikes (average " + strconv.FormatInt(sum/int64(len(e.samples)), 10) +
				"ms, mean deviation 0ms, period " + period(e) + "). Worst all time event " +
				strconv.FormatInt(e.max, 10) + "ms.\n")
		}
		b.WriteString("\nI have a few advices for you:\n\n- Check your system for slow commands with SLOWLOG GET, and the commands' latency with LATENCY HISTOGRAM.\n")
	}
	s.W.Verbatim(b.String())
}

// period is the mean time between an event's samples, as DOCTOR says it.
func period(e *latencyEvent) string {
	if len(e.samples) < 2 {
		return "0 sec"
	}
	span := e.samples[len(e.samples)-1].at - e.samples[0].at
	return strconv.FormatInt(span/int64(len(e.samples)-1), 10) + " sec"
}

// cmdLatencyGraph is LATENCY GRAPH event: a column chart of its samples.
func cmdLatencyGraph(s *Session) {
	g := &s.srv.diag
	g.mu.Lock()
	defer g.mu.Unlock()
	name := string(s.Args[2])
	e := g.events[name]
	if e == nil {
		s.W.Error("ERR No samples available for event '" + name + "'")
		return
	}
	lo, hi := e.samples[0].ms, e.samples[0].ms
	for _, x := range e.samples {
		lo, hi = min(lo, x.ms), max(hi, x.ms)
	}
	var b strings.Builder
	b.WriteString(name + " - high " + strconv.FormatInt(hi, 10) + " ms, low " + strconv.FormatInt(lo, 10) +
		" ms (all time high " + strconv.FormatInt(e.max, 10) + " ms)\n")
	b.WriteString(strings.Repeat("-", 80) + "\n")
	const rows = 4
	for r := rows; r >= 1; r-- {
		for _, x := range e.samples {
			if hi > 0 && x.ms*rows >= hi*int64(r) {
				b.WriteByte('#')
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	s.W.Verbatim(b.String())
}

// cmdLatencyHistogram is LATENCY HISTOGRAM [command ...]: for each command
// (a container names all its subcommands) that has run, its calls and the
// cumulative count of its timed calls at each power of two microseconds.
func cmdLatencyHistogram(s *Session) {
	var cmds []*Command
	add := func(c *Command) {
		if histCalls(s, c) > 0 {
			cmds = append(cmds, c)
		}
	}
	addAll := func(c *Command) {
		if c.subs == nil {
			add(c)
			return
		}
		for _, sc := range c.Subs {
			add(sc)
		}
	}
	t := s.srv.table
	if len(s.Args) == 2 {
		names := make([]string, 0, len(t.cmds))
		for n := range t.cmds {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			addAll(t.cmds[n])
		}
	}
	seen := map[*Command]bool{}
	for _, a := range s.Args[2:] {
		name := strings.ToLower(string(a))
		parent, sub, isSub := strings.Cut(name, "|")
		c := t.cmds[parent]
		if c == nil || seen[c] && !isSub {
			continue
		}
		if isSub {
			if c = c.subs[sub]; c == nil || seen[c] {
				continue
			}
			seen[c] = true
			add(c)
			continue
		}
		seen[c] = true
		addAll(c)
	}
	s.W.Map(len(cmds))
	for _, c := range cmds {
		s.W.BulkString(c.Name)
		s.W.Map(2)
		s.W.BulkString("calls")
		s.W.Int(histCalls(s, c))
		s.W.BulkString("histogram_usec")
		writeCDF(s, c.stats.lat.Load())
	}
}

// histCalls is the calls of c that LATENCY HISTOGRAM reports: those
// counted, or those timed when more (CONFIG RESETSTAT's own call, counted
// before it reset the counters and timed after). The running call, of s,
// counts once it has run, as in Redis.
func histCalls(s *Session, c *Command) int64 {
	n := c.stats.calls.Load()
	if s.lastCmd.Load() == c {
		n--
	}
	if h := c.stats.lat.Load(); h != nil {
		n = max(n, h.total.Load())
	}
	return n
}

// writeCDF writes h as Redis's histogram_usec map: at 1, 2, 4 … µs (1024
// ns doubling), the calls at or below it, where that count grows.
func writeCDF(s *Session, h *latencyHist) {
	var pairs [][2]int64
	if h != nil {
		total := h.total.Load()
		var cum, prev int64
		i := 0
		for lvl := uint64(1024); cum < total && lvl != 0; lvl <<= 1 {
			for last := histIndex(lvl); i <= last && i < histBuckets; i++ {
				cum += h.counts[i].Load()
			}
			if cum > prev {
				pairs = append(pairs, [2]int64{int64(lvl / 1000), cum})
			}
			prev = cum
		}
	}
	s.W.Map(len(pairs))
	for _, p := range pairs {
		s.W.Int(p[0])
		s.W.Int(p[1])
	}
}

// cmdLatencyHelp is LATENCY HELP.
func cmdLatencyHelp(s *Session) {
	help(s, "LATENCY",
		"DOCTOR", "    Return a human readable latency analysis report.",
		"GRAPH <event>", "    Return an ASCII latency graph for the <event> class.",
		"HISTORY <event>", "    Return time-latency samples for the <event> class.",
		"LATEST", "    Return the latest latency samples for all events.",
		"RESET [<event> ...]", "    Reset latency data of one or more <event> classes.",
		"    (default: reset all data for all event classes)",
		"HISTOGRAM [COMMAND ...]", "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
		"    If no commands are specified then all histograms are replied.")
}

package server

import (
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// timeSample is how often a command's duration is measured for INFO
// commandstats and latencystats: reading the clock twice costs more than a
// fast command itself, so the first call of every timeSample calls of a
// command is timed, and so is any call while latency-tracking is on and
// the command has no latency sample yet, so that every command run since
// CONFIG RESETSTAT has its line. The commandstats usec are estimated from
// the timed calls, and the latencystats percentiles are those of the timed
// calls: a sample of one call in timeSample, where Redis times every call.
const timeSample = 32

// cmdStats are one command's INFO commandstats and latencystats counters.
type cmdStats struct {
	calls, rejected, failed atomic.Int64
	// timed and timedNs are the calls measured and their total duration.
	timed, timedNs atomic.Int64
	// lat is the latency histogram of the timed calls, made on first use
	// while latency-tracking is on.
	lat atomic.Pointer[latencyHist]
}

// commandsProcessed is INFO's total_commands_processed: the calls of
// every command and subcommand, summed when asked rather than counted
// once more per call.
func (srv *Server) commandsProcessed() int64 {
	var n int64
	for _, c := range srv.table.cmds {
		n += c.stats.calls.Load()
		for _, sc := range c.Subs {
			n += sc.stats.calls.Load()
		}
	}
	return n
}

// startCall counts a call of the command and reports whether it is one of
// the timed ones; track is whether latency-tracking is on.
func (st *cmdStats) startCall(track bool) bool {
	return (st.calls.Add(1)-1)%timeSample == 0 || track && st.lat.Load() == nil
}

// endTimed accounts for a timed call that took d.
func (st *cmdStats) endTimed(d time.Duration, track bool) {
	st.timed.Add(1)
	st.timedNs.Add(int64(d))
	if !track {
		return
	}
	h := st.lat.Load()
	if h == nil {
		h = new(latencyHist)
		if !st.lat.CompareAndSwap(nil, h) {
			h = st.lat.Load()
		}
	}
	h.record(d)
}

// usec estimates the microseconds spent in all calls from the timed ones.
func (st *cmdStats) usec() int64 {
	calls, timed, ns := st.calls.Load(), st.timed.Load(), st.timedNs.Load()
	if timed == 0 {
		return 0
	}
	return int64(float64(ns) / 1e3 * float64(calls) / float64(timed))
}

// reset clears the counters (CONFIG RESETSTAT).
func (st *cmdStats) reset() {
	for _, v := range []*atomic.Int64{&st.calls, &st.rejected, &st.failed, &st.timed, &st.timedNs} {
		v.Store(0)
	}
	st.lat.Store(nil)
}

// The latency histogram is log-linear over nanoseconds: values below
// 2^histSubBits are exact, larger ones fall in one of 2^histSubBits
// buckets per power of two, about 3% wide, as HdrHistogram's two
// significant digits of Redis's own.
const (
	histSubBits = 5
	histSub     = 1 << histSubBits
	histBuckets = (64 - histSubBits + 1) * histSub
)

// latencyHist counts durations by bucket; any goroutine may record.
type latencyHist struct {
	counts [histBuckets]atomic.Int64
	total  atomic.Int64
	sumNs  atomic.Int64 // the durations' total, for metrics
}

// histIndex is the bucket of v nanoseconds.
func histIndex(v uint64) int {
	if v < histSub {
		return int(v)
	}
	e := bits.Len64(v) - 1 // v's highest bit, >= histSubBits
	sub := int(v>>(e-histSubBits)) & (histSub - 1)
	return (e-histSubBits+1)*histSub + sub
}

// histUpper is the highest value bucket i holds.
func histUpper(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	e := i/histSub + histSubBits - 1
	sub := uint64(i % histSub)
	lo := (uint64(histSub) + sub) << (e - histSubBits)
	return lo + (uint64(1) << (e - histSubBits)) - 1
}

func (h *latencyHist) record(d time.Duration) {
	if d < 1 {
		d = 1
	}
	h.counts[histIndex(uint64(d))].Add(1)
	h.total.Add(1)
	h.sumNs.Add(int64(d))
}

// percentile is the value, in nanoseconds, at or below which p percent of
// the recorded durations lie.
func (h *latencyHist) percentile(p float64) uint64 {
	total := h.total.Load()
	if total == 0 {
		return 0
	}
	want := int64(math.Ceil(p / 100 * float64(total)))
	if want < 1 {
		want = 1
	}
	var seen int64
	last := 0
	for i := range h.counts {
		n := h.counts[i].Load()
		if n == 0 {
			continue
		}
		last = i
		if seen += n; seen >= want {
			return histUpper(i)
		}
	}
	return histUpper(last)
}

// latencyLine is a command's INFO latencystats value, the configured
// percentiles in microseconds with three decimals.
func (h *latencyHist) latencyLine(percentiles []float64) string {
	var b strings.Builder
	for i, p := range percentiles {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("p" + strconv.FormatFloat(p, 'f', -1, 64) + "=")
		b.WriteString(strconv.FormatFloat(float64(h.percentile(p))/1e3, 'f', 3, 64))
	}
	return b.String()
}

// instSamples is how many samples an instantaneous metric averages, as
// Redis's STATS_METRIC_SAMPLES.
const instSamples = 16

// instMetric is a rate over the last samples of a growing counter, for
// INFO's instantaneous_* fields. Only the server's periodic task writes it;
// INFO reads it under instMu.
type instMetric struct {
	lastTime  int64 // unix ms of the previous sample
	lastValue int64
	samples   [instSamples]float64 // per second
	next      int
}

// sample records the rate since the previous sample.
func (m *instMetric) sample(nowMs, value int64) {
	if m.lastTime != 0 && nowMs > m.lastTime {
		m.samples[m.next] = float64(value-m.lastValue) * 1000 / float64(nowMs-m.lastTime)
		m.next = (m.next + 1) % instSamples
	}
	m.lastTime, m.lastValue = nowMs, value
}

// rate is the mean of the samples.
func (m *instMetric) rate() float64 {
	sum := 0.0
	for _, v := range m.samples {
		sum += v
	}
	return sum / instSamples
}

// instStats are the instantaneous metrics INFO stats shows.
type instStats struct {
	ops, netIn, netOut instMetric
}

// sampleStats takes one sample of the instantaneous metrics; the periodic
// task calls it.
func (srv *Server) sampleStats(now time.Time) {
	ms := now.UnixMilli()
	srv.instMu.Lock()
	srv.inst.ops.sample(ms, srv.commandsProcessed())
	srv.inst.netIn.sample(ms, srv.netIn.Load())
	srv.inst.netOut.sample(ms, srv.netOut.Load())
	srv.instMu.Unlock()
}

// instantaneousInfo returns INFO stats' instantaneous_* fields.
func (srv *Server) instantaneousInfo() [][2]string {
	srv.instMu.Lock()
	defer srv.instMu.Unlock()
	kbps := func(m *instMetric) string { return strconv.FormatFloat(m.rate()/1024, 'f', 2, 64) }
	return [][2]string{
		{"instantaneous_ops_per_sec", strconv.FormatInt(int64(srv.inst.ops.rate()), 10)},
		{"instantaneous_input_kbps", kbps(&srv.inst.netIn)},
		{"instantaneous_output_kbps", kbps(&srv.inst.netOut)},
	}
}

// AddNetIO counts bytes a transport read from and wrote to its clients,
// for INFO's total_net_input_bytes and total_net_output_bytes.
func (srv *Server) AddNetIO(in, out int) {
	if in > 0 {
		srv.netIn.Add(int64(in))
	}
	if out > 0 {
		srv.netOut.Add(int64(out))
	}
}

// latencyPercentiles parses latency-tracking-info-percentiles.
func latencyPercentiles(v string) []float64 {
	var out []float64
	for _, f := range strings.Fields(v) {
		if p, err := strconv.ParseFloat(f, 64); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// sectionTitle is an INFO section's heading as Redis prints it.
func sectionTitle(name string) string {
	if name == "cpu" {
		return "CPU"
	}
	return strings.ToUpper(name[:1]) + name[1:]
}

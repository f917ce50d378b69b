package realtime

import (
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/sync/apikey"
)

// subscription is one Subscribe of a connection: a bus subscription for
// its channel string (a glob or a plain name) with its filter.
type subscription struct {
	c       *conn
	channel string
	glob    bool
	filter  *regexp.Regexp // nil for none
	// checkEach is set for a glob the capability does not cover as a
	// whole: each delivered channel is checked against it. An Auth may
	// change it while publishers read it.
	checkEach atomic.Bool
	bus       *server.BusSub
	// dead stops deliveries at once, before the bus subscription is gone
	// (replaced by a new Subscribe, unsubscribed, refused by an Auth).
	dead atomic.Bool
}

// isGlob reports whether a Subscribe's channel is a glob rather than a
// plain channel name: whether it holds a character KEYS matching treats
// specially.
func isGlob(ch string) bool { return strings.ContainsAny(ch, `*?[\`) }

// encodedMessage is the Message frame of one publication.
type encodedMessage struct {
	m     *server.BusMessage
	frame []byte
}

// messageFrame returns the Message frame of m as a complete WebSocket
// frame. The bus hands a publication to its subscribers one after the
// other, so the frame built for the first is kept and shared by the next
// ones: fan-out to N connections encodes once.
func (l *Listener) messageFrame(m *server.BusMessage) []byte {
	if e := l.last.Load(); e != nil && e.m == m {
		return e.frame
	}
	f := wsFrame(wsText, appendMessage(nil, fieldsOf(m)))
	l.last.Store(&encodedMessage{m: m, frame: f})
	return f
}

// respConnectionID is the connectionId of messages that did not come from
// a realtime Publish (RESP PUBLISH, keyspace notifications).
const respConnectionID = "resp"

// fieldsOf maps a bus message to a Message frame (SPEC section 11): a
// realtime Publish keeps its name, data and connection id; anything else
// has its payload as a JSON string for data and connectionId "resp".
func fieldsOf(m *server.BusMessage) *messageFields {
	f := &messageFields{channel: m.Channel, unixMsec: m.Time.UnixMilli()}
	if rt := m.Realtime; rt != nil {
		f.name, f.hasName = rt.Name, rt.HasName
		f.data = rt.Data
		f.connID = rt.ConnectionID
		return f
	}
	f.dataStr, f.strData = m.Payload, true
	f.connID = respConnectionID
	return f
}

// deliver is the subscription's Deliver: it runs on the publisher's
// goroutine and only queues.
func (s *subscription) deliver(m *server.BusMessage) {
	c := s.c
	if s.dead.Load() {
		return
	}
	if !c.echo && m.Realtime != nil && m.Realtime.ConnectionID == c.id {
		return
	}
	c.deliverOnce(m, c.l.messageFrame(m))
}

// accepts is the subscription's Filter: the RE2 filter, and for a glob the
// capability does not cover as a whole, the capability's word on the
// delivered channel.
func (s *subscription) accepts(ch []byte) bool {
	if s.filter != nil && !s.filter.Match(ch) {
		return false
	}
	if s.checkEach.Load() {
		g := s.c.capab.Load()
		return g != nil && g.cap.Allows(string(ch), opSubscribeCap)
	}
	return true
}

// subscribe runs a Subscribe: checks, then the bus subscription, whose
// Start queues the Ack and the rewound history before any live message;
// a previous Subscribe of the same channel string is replaced, with no
// message lost or repeated between the two. A plain channel is attached
// too.
func (c *conn) subscribe(req *request) {
	glob := isGlob(req.channel)
	if glob && req.rewind > 0 {
		c.nack(req.id, codeBadRequest, req.channel, "rewind needs a plain channel name, not a glob")
		return
	}
	var filter *regexp.Regexp
	if req.hasFilt {
		re, err := regexp.Compile(req.filter)
		if err != nil {
			c.nack(req.id, codeBadRequest, req.channel, fmt.Sprintf("bad filter: %v", err))
			return
		}
		filter = re
	}
	if !c.grant.cap.Allows(req.channel, opSubscribeCap) {
		c.nack(req.id, codeForbidden, req.channel, fmt.Sprintf("the capability does not allow subscribe on %q", req.channel))
		return
	}
	old := c.subs[req.channel]
	if old == nil && len(c.subs) >= c.l.opts.MaxSubscriptions {
		c.nack(req.id, codeTooMany, req.channel, fmt.Sprintf("%d subscriptions on this connection, the ceiling", c.l.opts.MaxSubscriptions))
		return
	}
	s := &subscription{c: c, channel: req.channel, glob: glob, filter: filter}
	s.checkEach.Store(glob && !covers(c.grant, req.channel))
	opts := server.BusSubOptions{
		Channel: req.channel,
		Glob:    glob,
		Rewind:  req.rewind,
		Deliver: s.deliver,
		Start: func(history []*server.BusMessage) {
			if old != nil {
				old.dead.Store(true)
			}
			c.ack(req.id)
			for _, m := range history {
				if s.accepts(m.Channel) {
					c.enqueue(c.l.messageFrame(m))
				}
			}
		},
	}
	if filter != nil || glob {
		opts.Filter = s.accepts
	}
	s.bus = c.l.srv.BusSubscribe(opts)
	if old != nil {
		c.l.srv.BusUnsubscribe(old.bus)
	}
	c.subs[req.channel] = s
	if !glob {
		c.attachImplicit(req.channel)
	}
}

// unsubscribe runs an Unsubscribe; one of a channel not subscribed is
// acknowledged too.
func (c *conn) unsubscribe(req *request) {
	if s := c.subs[req.channel]; s != nil {
		c.dropSub(s)
	}
	c.ack(req.id)
}

// dropSub ends subscription s.
func (c *conn) dropSub(s *subscription) {
	s.dead.Store(true)
	c.l.srv.BusUnsubscribe(s.bus)
	delete(c.subs, s.channel)
}

// publish runs a Publish: the capability, the connection's rate, then the
// bus publish, the log's commit (under appendfsync always the history
// record is on disk before the Ack), the Ack, and the implicit attach.
func (c *conn) publish(req *request) {
	if !c.grant.cap.Allows(req.channel, opPublishCap) {
		c.nack(req.id, codeForbidden, req.channel, fmt.Sprintf("the capability does not allow publish on %q", req.channel))
		return
	}
	now := time.Now()
	if now.Sub(c.winStart) >= time.Second {
		c.winStart, c.winCount = now, 0
	}
	if c.winCount >= c.l.opts.MaxPublishRate {
		c.nack(req.id, codeTooMany, req.channel, fmt.Sprintf("more than %d publishes per second on this connection", c.l.opts.MaxPublishRate))
		return
	}
	c.winCount++
	c.l.srv.BusPublish([]byte(req.channel), server.RealtimeMeta{
		Name:         req.name,
		HasName:      req.hasName,
		Data:         req.data,
		ConnectionID: c.id,
	})
	c.l.srv.Commit()
	c.ack(req.id)
	if c.grant.cap.Allows(req.channel, opSubscribeCap) {
		c.attachImplicit(req.channel)
	}
}

// covers reports whether every channel glob pat can match is within g's
// subscribe capability, judged conservatively: some capability glob
// listing subscribe is "*" or a literal prefix then "*" that pat starts
// with. When it is not sure, each delivery is checked.
func covers(g *grant, pat string) bool {
	for glob, ops := range g.cap {
		if !hasOp(ops, opSubscribeCap) {
			continue
		}
		if !strings.HasSuffix(glob, "*") {
			continue
		}
		prefix := glob[:len(glob)-1]
		if !isGlob(prefix) && strings.HasPrefix(pat, prefix) {
			return true
		}
	}
	return false
}

func hasOp(ops []string, op string) bool {
	for _, o := range ops {
		if o == op || o == apikey.OpAll {
			return true
		}
	}
	return false
}

package realtime

import (
	"fmt"
	"sort"

	"github.com/recached/recached/sync/realtime/wire"
)

// run runs one decoded request.
func (c *conn) run(req *request) {
	if req.op != wire.Auth && c.revoked() {
		c.revoke()
		return
	}
	switch req.op {
	case wire.Heartbeat:
		c.enqueue(wsFrame(wsText, appendHeartbeat(nil, req.id)))
	case wire.Subscribe:
		c.subscribe(req)
	case wire.Unsubscribe:
		c.unsubscribe(req)
	case wire.Publish:
		c.publish(req)
	case wire.Attach:
		c.attach(req)
	case wire.Detach:
		c.detach(req)
	case wire.PresenceEnter, wire.PresenceUpdate, wire.PresenceLeave:
		c.presence(req)
	case wire.Auth:
		c.auth(req)
	}
}

// attach runs an Attach: the Ack, then one enter frame per member present.
func (c *conn) attach(req *request) {
	if !c.grant.cap.Allows(req.channel, opSubscribeCap) {
		c.nack(req.id, codeForbidden, req.channel, fmt.Sprintf("the capability does not allow subscribe (attach) on %q", req.channel))
		return
	}
	var ack []byte
	if req.id != nil {
		ack = wsFrame(wsText, appendAck(nil, req.id))
	}
	if c.attached == nil {
		c.attached = make(map[string]struct{})
	}
	c.attached[req.channel] = struct{}{}
	c.l.pres.attach(c, req.channel, ack)
}

// attachImplicit attaches the channel a Subscribe or Publish named, as the
// seed's client does, unless it is attached already.
func (c *conn) attachImplicit(ch string) {
	if _, ok := c.attached[ch]; ok {
		return
	}
	if c.attached == nil {
		c.attached = make(map[string]struct{})
	}
	c.attached[ch] = struct{}{}
	c.l.pres.attach(c, ch, nil)
}

// detach runs a Detach: presence of the channel is no longer delivered,
// and the connection's own members on it leave (as on Ably).
func (c *conn) detach(req *request) {
	c.detachChannel(req.channel)
	c.ack(req.id)
}

func (c *conn) detachChannel(ch string) {
	delete(c.attached, ch)
	delete(c.entered, ch)
	c.l.pres.detach(c, ch)
}

// presence runs PresenceEnter, PresenceUpdate and PresenceLeave. The
// member's clientId is the token's when it has one (a frame naming another
// is refused with 403), else the frame's, which is then required.
func (c *conn) presence(req *request) {
	if !c.grant.cap.Allows(req.channel, opPresenceCap) {
		c.nack(req.id, codeForbidden, req.channel, fmt.Sprintf("the capability does not allow presence on %q", req.channel))
		return
	}
	cid := req.clientID
	switch {
	case c.grant.clientID != "" && req.hasCID && req.clientID != c.grant.clientID:
		c.nack(req.id, codeForbidden, req.channel, fmt.Sprintf("the token's clientId is %q, not %q", c.grant.clientID, req.clientID))
		return
	case c.grant.clientID != "":
		cid = c.grant.clientID
	case !req.hasCID:
		c.nack(req.id, codeBadRequest, req.channel, "clientId is required: the credential names none")
		return
	}
	if req.op == wire.PresenceLeave {
		c.l.pres.leave(c, req.channel, cid, req.data)
		if set := c.entered[req.channel]; set != nil {
			delete(set, cid)
			if len(set) == 0 {
				delete(c.entered, req.channel)
			}
		}
		c.ack(req.id)
		return
	}
	if !c.l.pres.enter(c, req.channel, cid, req.data, req.op == wire.PresenceUpdate) {
		c.nack(req.id, codeTooMany, req.channel, fmt.Sprintf("%d presence members on %q, the ceiling", c.l.opts.MaxMembers, req.channel))
		return
	}
	if c.entered == nil {
		c.entered = make(map[string]map[string]struct{})
	}
	set := c.entered[req.channel]
	if set == nil {
		set = make(map[string]struct{})
		c.entered[req.channel] = set
	}
	set[cid] = struct{}{}
	c.ack(req.id)
}

// auth runs an Auth: on a valid credential, Ack and a fresh Connected
// (same connectionId), the new capability in force at once, and each
// subscription, attachment or presence membership it no longer covers
// removed with a 403 frame naming its channel. An invalid credential ends
// the connection (401), as at connect; a valid one for another key whose
// connections are at their ceiling is refused with 429 and the old
// credential kept.
func (c *conn) auth(req *request) {
	g, ferr := c.l.authenticate(credential{text: req.cred, isKey: req.credKey})
	if ferr != nil {
		c.finish(appendNack(nil, req.id, ferr.code, "", ferr.message), closePolicy, ferr.message, true)
		return
	}
	if g.keyID != c.grant.keyID {
		if !c.l.acquire(g.keyID) {
			c.nack(req.id, codeTooMany, "", fmt.Sprintf("API key %s has %d connections, its ceiling", g.keyID, c.l.opts.MaxConnsPerKey))
			return
		}
		c.l.release(c.grant.keyID)
	}
	// Deliveries the new capability refuses stop before the Ack.
	var gone []*subscription
	for _, s := range c.subs {
		if !g.cap.Allows(s.channel, opSubscribeCap) {
			s.dead.Store(true)
			gone = append(gone, s)
		}
	}
	c.setGrant(g)
	for _, s := range c.subs {
		s.checkEach.Store(s.glob && !covers(g, s.channel))
	}
	c.ack(req.id)
	c.enqueue(wsFrame(wsText, appendConnected(nil, c.id)))
	sort.Slice(gone, func(i, j int) bool { return gone[i].channel < gone[j].channel })
	for _, s := range gone {
		c.dropSub(s)
		c.nack(nil, codeForbidden, s.channel, fmt.Sprintf("subscription to %q removed: the new capability does not allow subscribe", s.channel))
	}
	for _, ch := range sortedKeys(c.attached) {
		if !g.cap.Allows(ch, opSubscribeCap) {
			c.detachChannel(ch)
			c.nack(nil, codeForbidden, ch, fmt.Sprintf("attachment to %q removed: the new capability does not allow subscribe", ch))
		}
	}
	for _, ch := range sortedKeys(c.entered) {
		if !g.cap.Allows(ch, opPresenceCap) {
			delete(c.entered, ch)
			c.l.pres.leaveAll(c, ch)
			c.nack(nil, codeForbidden, ch, fmt.Sprintf("presence on %q left: the new capability does not allow presence", ch))
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// cleanup releases what the connection holds once its reader is done:
// its subscriptions, attachments and members (whose leave frames go out).
func (c *conn) cleanup() {
	for _, s := range c.subs {
		c.dropSub(s)
	}
	chans := make([]string, 0, len(c.attached)+len(c.entered))
	for ch := range c.attached {
		chans = append(chans, ch)
	}
	for ch := range c.entered {
		if _, ok := c.attached[ch]; !ok {
			chans = append(chans, ch)
		}
	}
	c.l.pres.drop(c, chans)
}

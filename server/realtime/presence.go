package realtime

import (
	"sync"
	"time"
)

// Presence actions, as the Presence frame spells them.
const (
	actionEnter  = "enter"
	actionUpdate = "update"
	actionLeave  = "leave"
)

// presence is the listener's presence state (SPEC section 9 "Presence"):
// for every channel, its members and the connections attached to it. It is
// in memory only. One mutex guards it all, and every Presence frame is
// queued while it is held, so that every attached connection sees a
// channel's presence changes in the same order, and an Attach's member
// list is exact: no change is lost or repeated between the list and the
// live changes.
type presence struct {
	mu         sync.Mutex
	chans      map[string]*presenceChannel
	maxMembers int
}

// presenceChannel is one channel's members, in order of entry, and its
// attached connections.
type presenceChannel struct {
	members  []*member
	byKey    map[memberKey]*member
	attached map[*conn]struct{}
}

// memberKey names a member: a connection enters at most one per client id.
type memberKey struct {
	c        *conn
	clientID string
}

// member is one (connection, clientId) present on a channel.
type member struct {
	c        *conn
	clientID string
	data     []byte // raw JSON; nil when it has none
}

func newPresence(maxMembers int) *presence {
	return &presence{chans: make(map[string]*presenceChannel), maxMembers: maxMembers}
}

// channel returns the state of ch, creating it when create is set (else
// nil when it has none). The caller holds mu.
func (p *presence) channel(ch string, create bool) *presenceChannel {
	pc := p.chans[ch]
	if pc == nil && create {
		pc = &presenceChannel{byKey: make(map[memberKey]*member), attached: make(map[*conn]struct{})}
		p.chans[ch] = pc
	}
	return pc
}

// gc drops ch's state once it has no member and no attached connection.
// The caller holds mu.
func (p *presence) gc(ch string, pc *presenceChannel) {
	if len(pc.members) == 0 && len(pc.attached) == 0 {
		delete(p.chans, ch)
	}
}

// remove takes m out of pc.
func (pc *presenceChannel) remove(m *member) {
	delete(pc.byKey, memberKey{m.c, m.clientID})
	for i, v := range pc.members {
		if v == m {
			copy(pc.members[i:], pc.members[i+1:])
			pc.members[len(pc.members)-1] = nil
			pc.members = pc.members[:len(pc.members)-1]
			return
		}
	}
}

// broadcast queues one Presence frame, encoded once, on every connection
// attached to the channel. The caller holds mu.
func (pc *presenceChannel) broadcast(ch, action string, m *member, data []byte) {
	if len(pc.attached) == 0 {
		return
	}
	f := wsFrame(wsText, appendPresence(nil, ch, action, m.clientID, m.c.id, data, time.Now().UnixMilli()))
	for a := range pc.attached {
		a.enqueue(f)
	}
}

// attach attaches c to ch and queues on c, in this order, the frame before
// (the Attach's Ack; nil for none) and one enter frame per member present.
func (p *presence) attach(c *conn, ch string, before []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.channel(ch, true)
	pc.attached[c] = struct{}{}
	if before != nil {
		c.enqueue(before)
	}
	now := time.Now().UnixMilli()
	for _, m := range pc.members {
		c.enqueue(wsFrame(wsText, appendPresence(nil, ch, actionEnter, m.clientID, m.c.id, m.data, now)))
	}
}

// detach stops presence delivery of ch to c; c's own members on ch leave.
func (p *presence) detach(c *conn, ch string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.channel(ch, false)
	if pc == nil {
		return
	}
	delete(pc.attached, c)
	p.leaveAllLocked(c, ch, pc)
	p.gc(ch, pc)
}

// enter enters (or, when present, updates) c's member clientID on ch with
// data; update does the same with the update action when the member is
// present. It reports false when the channel is full (429).
func (p *presence) enter(c *conn, ch, clientID string, data []byte, update bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.channel(ch, true)
	if m := pc.byKey[memberKey{c, clientID}]; m != nil {
		m.data = data
		pc.broadcast(ch, actionUpdate, m, data)
		return true
	}
	if len(pc.members) >= p.maxMembers {
		p.gc(ch, pc)
		return false
	}
	m := &member{c: c, clientID: clientID, data: data}
	pc.members = append(pc.members, m)
	pc.byKey[memberKey{c, clientID}] = m
	pc.broadcast(ch, actionEnter, m, data)
	return true
}

// leave removes c's member clientID from ch, whose leave frame carries
// data, or the member's last data when data is nil. It reports whether the
// member was present.
func (p *presence) leave(c *conn, ch, clientID string, data []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.channel(ch, false)
	if pc == nil {
		return false
	}
	m := pc.byKey[memberKey{c, clientID}]
	if m == nil {
		return false
	}
	pc.remove(m)
	if data == nil {
		data = m.data
	}
	pc.broadcast(ch, actionLeave, m, data)
	p.gc(ch, pc)
	return true
}

// leaveAll makes every member of c on ch leave.
func (p *presence) leaveAll(c *conn, ch string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pc := p.channel(ch, false); pc != nil {
		p.leaveAllLocked(c, ch, pc)
		p.gc(ch, pc)
	}
}

// leaveAllLocked is leaveAll for a caller holding mu.
func (p *presence) leaveAllLocked(c *conn, ch string, pc *presenceChannel) {
	kept := pc.members[:0]
	var gone []*member
	for _, m := range pc.members {
		if m.c == c {
			gone = append(gone, m)
			delete(pc.byKey, memberKey{m.c, m.clientID})
		} else {
			kept = append(kept, m)
		}
	}
	clear(pc.members[len(kept):])
	pc.members = kept
	for _, m := range gone {
		pc.broadcast(ch, actionLeave, m, m.data)
	}
}

// drop removes c from every channel in chans at once (its connection
// closed): it is detached and its members leave.
func (p *presence) drop(c *conn, chans []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ch := range chans {
		pc := p.channel(ch, false)
		if pc == nil {
			continue
		}
		delete(pc.attached, c)
		p.leaveAllLocked(c, ch, pc)
		p.gc(ch, pc)
	}
}

// members returns the number of members on ch (for tests and stats).
func (p *presence) members(ch string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pc := p.channel(ch, false); pc != nil {
		return len(pc.members)
	}
	return 0
}

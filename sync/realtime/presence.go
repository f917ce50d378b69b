package realtime

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/recached/recached/sync/realtime/wire"
)

// PresenceMessage is one member of a channel, or one change of it.
type PresenceMessage struct {
	Action       string // "enter", "update" or "leave" (members are "enter" or "update")
	Channel      string
	ClientID     string
	ConnectionID string
	Data         json.RawMessage
	Timestamp    time.Time
}

// memberKey identifies a member: one per (clientId, connection).
type memberKey struct{ clientID, connID string }

// Presence is a channel's member set, kept in sync while the channel is
// attached, and this client's own members, entered again after a reconnect.
type Presence struct {
	ch *Channel

	// Guarded by c.mu.
	members map[memberKey]PresenceMessage
	prev    map[memberKey]PresenceMessage // during a sync: members not yet seen again
	syncing bool
	synced  chan struct{} // closed when the current attach's member list is complete
	syncErr error
	own     map[string]json.RawMessage // clientId → data this client entered
	subs    []*PresenceSubscription
}

// PresenceSubscription receives a channel's presence changes on C (closed
// when it ends). Like Subscription it never blocks the client: a change that
// finds C full is dropped and counted.
type PresenceSubscription struct {
	C <-chan PresenceMessage

	p       *Presence
	out     chan PresenceMessage
	ended   bool
	dropped int64
}

// Presence returns the channel's presence.
func (ch *Channel) Presence() *Presence { return ch.presence }

// Enter enters clientID (the client's, or the token's when "") with data.
func (p *Presence) Enter(ctx context.Context, data any) error {
	return p.EnterClient(ctx, "", data)
}

// EnterClient enters the member clientID with data, attaching the channel
// implicitly, and waits for the Ack. It is entered again after reconnects.
func (p *Presence) EnterClient(ctx context.Context, clientID string, data any) error {
	return p.send(ctx, wire.PresenceEnter, clientID, data)
}

// Update changes the data of the client's member (entering it if absent).
func (p *Presence) Update(ctx context.Context, data any) error {
	return p.send(ctx, wire.PresenceUpdate, "", data)
}

// UpdateClient changes the data of member clientID.
func (p *Presence) UpdateClient(ctx context.Context, clientID string, data any) error {
	return p.send(ctx, wire.PresenceUpdate, clientID, data)
}

// Leave makes the client's member leave.
func (p *Presence) Leave(ctx context.Context) error { return p.send(ctx, wire.PresenceLeave, "", nil) }

// LeaveClient makes member clientID leave.
func (p *Presence) LeaveClient(ctx context.Context, clientID string) error {
	return p.send(ctx, wire.PresenceLeave, clientID, nil)
}

func (p *Presence) send(ctx context.Context, op int, clientID string, data any) error {
	raw, err := marshalData(data)
	if err != nil {
		return err
	}
	c := p.ch.c
	if clientID == "" {
		clientID = c.opts.ClientID
	}
	f := frame{Op: op, Channel: p.ch.name, ClientID: clientID, Data: raw}
	err = c.call(ctx, f, true, func(cn *conn) {
		p.ch.attach = true
		p.ch.resumeLocked(cn)
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	if op == wire.PresenceLeave {
		delete(p.own, clientID)
	} else {
		p.own[clientID] = raw
	}
	c.mu.Unlock()
	return nil
}

// Get attaches the channel when it is not, waits until its member set is
// known, and returns the members, by client id then connection id.
func (p *Presence) Get(ctx context.Context) ([]PresenceMessage, error) {
	c := p.ch.c
	c.mu.Lock()
	if _, err := c.connLocked(); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	if !p.ch.attach {
		p.ch.attach = true
		p.synced = nil
	}
	if p.synced == nil {
		p.synced = make(chan struct{})
	}
	if c.state == Connected && c.cn != nil {
		p.ch.resumeLocked(c.cn)
	}
	synced := p.synced
	c.mu.Unlock()
	select {
	case <-synced:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p.syncErr != nil {
		return nil, p.syncErr
	}
	return p.membersLocked(), nil
}

// Members returns the member set as last known, without waiting.
func (p *Presence) Members() []PresenceMessage {
	p.ch.c.mu.Lock()
	defer p.ch.c.mu.Unlock()
	return p.membersLocked()
}

func (p *Presence) membersLocked() []PresenceMessage {
	out := make([]PresenceMessage, 0, len(p.members))
	for _, m := range p.members {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b PresenceMessage) int {
		return cmp.Or(cmp.Compare(a.ClientID, b.ClientID), cmp.Compare(a.ConnectionID, b.ConnectionID))
	})
	return out
}

// Subscribe returns a subscription to the channel's presence changes
// (buffer ≤ 0: 256). It does not attach the channel: Get or Attach does.
func (p *Presence) Subscribe(buffer int) *PresenceSubscription {
	if buffer <= 0 {
		buffer = 256
	}
	s := &PresenceSubscription{p: p, out: make(chan PresenceMessage, buffer)}
	s.C = s.out
	p.ch.c.mu.Lock()
	p.subs = append(p.subs, s)
	p.ch.c.mu.Unlock()
	return s
}

// Close ends the presence subscription.
func (s *PresenceSubscription) Close() {
	c := s.p.ch.c
	c.mu.Lock()
	defer c.mu.Unlock()
	s.endLocked()
	s.p.subs = slices.DeleteFunc(s.p.subs, func(o *PresenceSubscription) bool { return o == s })
}

// Dropped returns how many changes found C full and were lost.
func (s *PresenceSubscription) Dropped() int64 {
	s.p.ch.c.mu.Lock()
	defer s.p.ch.c.mu.Unlock()
	return s.dropped
}

func (s *PresenceSubscription) endLocked() {
	if !s.ended {
		s.ended = true
		close(s.out)
	}
}

// attachLocked sends Attach on cn, a heartbeat behind it as a barrier (the
// server answers it after the members it sends right after the Ack), and
// the members this client entered.
func (p *Presence) attachLocked(cn *conn) {
	c := p.ch.c
	if p.synced == nil || p.isSynced() {
		p.synced = make(chan struct{})
	}
	p.syncErr = nil
	c.sendLocked(cn, frame{Op: wire.Attach, Channel: p.ch.name}, func(err error) {
		switch {
		case err == nil:
			p.prev, p.members, p.syncing = p.members, make(map[memberKey]PresenceMessage), true
		case errors.Is(err, errConnGone):
		default:
			p.syncErr = err
		}
	})
	c.sendLocked(cn, frame{Op: wire.Heartbeat}, func(err error) {
		if errors.Is(err, errConnGone) {
			return
		}
		if p.syncing {
			// Members not listed again left while this client was away.
			for k, m := range p.prev {
				m.Action, m.Timestamp = "leave", time.Now()
				p.emitLocked(m)
				delete(p.prev, k)
			}
			p.syncing, p.prev = false, nil
		}
		p.syncDoneLocked(err)
	})
	for id, data := range p.own {
		c.sendLocked(cn, frame{Op: wire.PresenceEnter, Channel: p.ch.name, ClientID: id, Data: data}, func(err error) {
			if err != nil && !errors.Is(err, errConnGone) {
				c.later = append(c.later, func() { c.report(fmt.Errorf("realtime: entering %q again on %q: %w", id, p.ch.name, err)) })
			}
		})
	}
}

func (p *Presence) isSynced() bool {
	select {
	case <-p.synced:
		return true
	default:
		return false
	}
}

// syncDoneLocked ends waits for the member set, with err when it failed.
func (p *Presence) syncDoneLocked(err error) {
	if p.synced == nil || p.isSynced() {
		return
	}
	if err != nil && p.syncErr == nil {
		p.syncErr = err
	}
	close(p.synced)
}

// applyLocked applies one Presence frame from the server.
func (p *Presence) applyLocked(f *frame) {
	k := memberKey{f.ClientID, f.ConnectionID}
	m := PresenceMessage{Action: f.Action, Channel: f.Channel, ClientID: f.ClientID, ConnectionID: f.ConnectionID, Data: f.Data, Timestamp: time.UnixMilli(f.Timestamp)}
	old, known := p.prev[k]
	delete(p.prev, k)
	switch f.Action {
	case "leave":
		delete(p.members, k)
	case "enter", "update":
		p.members[k] = m
		if p.syncing && known && bytes.Equal(old.Data, m.Data) {
			return // still there, unchanged: no event
		}
	default:
		return
	}
	p.emitLocked(m)
}

func (p *Presence) emitLocked(m PresenceMessage) {
	for _, s := range p.subs {
		select {
		case s.out <- m:
		default:
			s.dropped++
		}
	}
}

// resetLocked forgets the member set (detached).
func (p *Presence) resetLocked() {
	for k, m := range p.members {
		m.Action, m.Timestamp = "leave", time.Now()
		p.emitLocked(m)
		delete(p.members, k)
	}
	p.prev, p.syncing = nil, false
	p.syncDoneLocked(errors.New("realtime: detached"))
	p.synced = nil
}

// endLocked ends the presence state with err (client closed, or the
// capability no longer covers the channel).
func (p *Presence) endLocked(err error) {
	p.resetLocked()
	p.syncErr = err
	p.own = make(map[string]json.RawMessage)
	if err == ErrClosed {
		for _, s := range p.subs {
			s.endLocked()
		}
		p.subs = nil
	}
}

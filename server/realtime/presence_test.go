package realtime

import (
	"testing"
	"time"

	"github.com/recached/recached/sync/realtime/wire"
)

func enter(id, channel, clientID string, data any) map[string]any {
	m := map[string]any{"op": wire.PresenceEnter, "id": id, "channel": channel}
	if clientID != "" {
		m["clientId"] = clientID
	}
	if data != nil {
		m["data"] = data
	}
	return m
}

// TestPresence: attached connections see enter, update and leave; an
// Attach lists the members present right after its Ack; a closed
// connection's members leave at once; Detach stops delivery.
func TestPresence(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	a, aID := r.connect(t, keyQuery("k1"))
	b, bID := r.connect(t, keyQuery("k1"))
	a.request(map[string]any{"op": wire.Attach, "id": "1", "channel": "chat:p"})

	// a's own enter reaches it (attached) before the Ack.
	a.send(enter("2", "chat:p", "ann", map[string]any{"s": "here"}))
	a.expect(wire.Presence, map[string]any{"channel": "chat:p", "action": "enter", "clientId": "ann", "connectionId": aID, "data": map[string]any{"s": "here"}})
	a.expect(wire.Ack, map[string]any{"id": "2"})

	// b attaches: the Ack, then one enter per member present.
	b.send(map[string]any{"op": wire.Attach, "id": "3", "channel": "chat:p"})
	b.expect(wire.Ack, map[string]any{"id": "3"})
	f := b.expect(wire.Presence, map[string]any{"action": "enter", "clientId": "ann", "connectionId": aID, "data": map[string]any{"s": "here"}})
	if f.num("timestamp") == 0 {
		t.Fatalf("%v has no timestamp", f)
	}
	b.quiet()

	// b enters two members; entering one again is an update.
	b.send(enter("4", "chat:p", "bob", nil))
	for _, c := range []*client{a, b} {
		f := c.expect(wire.Presence, map[string]any{"action": "enter", "clientId": "bob", "connectionId": bID})
		if _, ok := f["data"]; ok {
			t.Fatalf("%v has data", f)
		}
	}
	b.expect(wire.Ack, map[string]any{"id": "4"})
	b.send(enter("5", "chat:p", "bob", "again"))
	a.expect(wire.Presence, map[string]any{"action": "update", "clientId": "bob", "data": "again"})
	b.expect(wire.Presence, map[string]any{"action": "update"})
	b.expect(wire.Ack, map[string]any{"id": "5"})
	// Update of a member not present enters it.
	b.send(map[string]any{"op": wire.PresenceUpdate, "id": "6", "channel": "chat:p", "clientId": "cat", "data": 1})
	a.expect(wire.Presence, map[string]any{"action": "enter", "clientId": "cat", "data": 1})
	b.expect(wire.Presence, map[string]any{"action": "enter"})
	b.expect(wire.Ack, map[string]any{"id": "6"})
	// Leave carries the member's last data unless it gives its own.
	b.send(map[string]any{"op": wire.PresenceLeave, "id": "7", "channel": "chat:p", "clientId": "cat"})
	a.expect(wire.Presence, map[string]any{"action": "leave", "clientId": "cat", "data": 1})
	b.expect(wire.Presence, map[string]any{"action": "leave"})
	b.expect(wire.Ack, map[string]any{"id": "7"})
	// Leave of a member not present: acknowledged, nothing sent.
	b.request(map[string]any{"op": wire.PresenceLeave, "id": "8", "channel": "chat:p", "clientId": "nobody"})
	a.quiet()

	// A third connection attaching now sees ann and bob, in order of entry.
	c, _ := r.connect(t, keyQuery("k1"))
	c.request(map[string]any{"op": wire.Attach, "id": "9", "channel": "chat:p"})
	c.expect(wire.Presence, map[string]any{"clientId": "ann", "action": "enter"})
	c.expect(wire.Presence, map[string]any{"clientId": "bob", "action": "enter", "data": "again"})
	c.quiet()

	// b closes: its member leaves at once, for a and c.
	b.ws.Close()
	for _, x := range []*client{a, c} {
		x.expect(wire.Presence, map[string]any{"action": "leave", "clientId": "bob", "connectionId": bID, "data": "again"})
	}
	waitFor(t, "bob gone", func() bool { return r.l.pres.members("chat:p") == 1 })

	// Detach: c stops receiving presence; a's members stay.
	c.request(map[string]any{"op": wire.Detach, "id": "10", "channel": "chat:p"})
	a.send(map[string]any{"op": wire.PresenceUpdate, "id": "11", "channel": "chat:p", "clientId": "ann", "data": "x"})
	a.expect(wire.Presence, map[string]any{"action": "update"})
	a.expect(wire.Ack, map[string]any{"id": "11"})
	c.quiet()

	// a detaches: its own member leaves (as on Ably).
	c.request(map[string]any{"op": wire.Attach, "id": "12", "channel": "chat:p"})
	c.expect(wire.Presence, map[string]any{"clientId": "ann"})
	a.request(map[string]any{"op": wire.Detach, "id": "13", "channel": "chat:p"})
	c.expect(wire.Presence, map[string]any{"action": "leave", "clientId": "ann"})
	if n := r.l.pres.members("chat:p"); n != 0 {
		t.Fatalf("%d members left", n)
	}
}

// TestImplicitAttach: Subscribe to a plain channel and Publish attach the
// channel; the members present follow the request's Ack.
func TestImplicitAttach(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	a, _ := r.connect(t, keyQuery("k1"))
	a.request(enter("1", "chat:i", "ann", nil)) // not attached: no Presence frame
	s, _ := r.connect(t, keyQuery("k1"))
	s.request(sub("2", "chat:i"))
	s.expect(wire.Presence, map[string]any{"action": "enter", "clientId": "ann"})
	p, _ := r.connect(t, keyQuery("k1"))
	p.request(pub("3", "chat:i", "", nil))
	p.expect(wire.Presence, map[string]any{"action": "enter", "clientId": "ann"})
	s.expect(wire.Message, nil)
	a.request(map[string]any{"op": wire.PresenceLeave, "id": "4", "channel": "chat:i", "clientId": "ann"})
	s.expect(wire.Presence, map[string]any{"action": "leave"})
	p.expect(wire.Presence, map[string]any{"action": "leave"})
	// A glob subscription attaches nothing.
	g, _ := r.connect(t, keyQuery("k1"))
	g.request(sub("5", "chat:*"))
	a.request(enter("6", "chat:i", "ann", nil))
	s.expect(wire.Presence, map[string]any{"action": "enter"})
	g.quiet()
}

// TestPresenceClientID: with a token's x-client-id, presence uses it and a
// frame naming another is 403; without one, clientId is required (400).
func TestPresenceClientID(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	tok := r.token(t, "k1", time.Hour, nil, "carol")
	c, cID := r.connect(t, "accessToken="+tok)
	c.request(map[string]any{"op": wire.Attach, "id": "0", "channel": "chat:c"})
	c.send(enter("1", "chat:c", "", "d"))
	c.expect(wire.Presence, map[string]any{"action": "enter", "clientId": "carol", "connectionId": cID})
	c.expect(wire.Ack, map[string]any{"id": "1"})
	c.send(enter("2", "chat:c", "carol", "e"))
	c.expect(wire.Presence, map[string]any{"action": "update", "clientId": "carol"})
	c.expect(wire.Ack, map[string]any{"id": "2"})
	for _, op := range []int{wire.PresenceEnter, wire.PresenceUpdate, wire.PresenceLeave} {
		c.send(map[string]any{"op": op, "id": "3", "channel": "chat:c", "clientId": "mallory"})
		c.expect(wire.Nack, map[string]any{"id": "3", "code": codeForbidden, "channel": "chat:c"})
	}
	c.quiet()

	k, _ := r.connect(t, keyQuery("k1"))
	k.send(enter("4", "chat:c", "", nil))
	k.expect(wire.Nack, map[string]any{"id": "4", "code": codeBadRequest})
	k.quiet()
}

// TestPresenceAcrossDisconnects: members of connections that go away,
// politely or not, leave; reconnecting and entering again enters anew.
func TestPresenceAcrossDisconnects(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	w, _ := r.connect(t, keyQuery("k1"))
	w.request(map[string]any{"op": wire.Attach, "id": "1", "channel": "chat:d"})
	for round := 0; round < 3; round++ {
		m, mID := r.connect(t, keyQuery("k1"))
		m.request(enter("e", "chat:d", "dan", nil))
		w.expect(wire.Presence, map[string]any{"action": "enter", "clientId": "dan", "connectionId": mID})
		if round%2 == 0 {
			m.ws.Close() // the TCP connection drops, no close frame
		} else {
			m.ws.WriteControl(8, []byte{0x03, 0xe8}, time.Now().Add(time.Second))
			m.expectClose(1000)
		}
		w.expect(wire.Presence, map[string]any{"action": "leave", "clientId": "dan", "connectionId": mID})
	}
	w.quiet()
	waitFor(t, "no members", func() bool { return r.l.pres.members("chat:d") == 0 })
}

// TestPresenceCapability: presence needs the presence capability, Attach
// the subscribe one; a 403 keeps the connection.
func TestPresenceCapability(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	c, _ := r.connect(t, keyQuery("k2"))
	c.send(enter("1", "news:1", "x", nil))
	c.expect(wire.Nack, map[string]any{"id": "1", "code": codeForbidden, "channel": "news:1"})
	c.send(map[string]any{"op": wire.Attach, "id": "2", "channel": "chat:1"})
	c.expect(wire.Nack, map[string]any{"id": "2", "code": codeForbidden, "channel": "chat:1"})
	c.request(map[string]any{"op": wire.Attach, "id": "3", "channel": "news:1"})
}

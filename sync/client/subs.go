package client

import "slices"

// Query is a live query: a registration of a pattern (QSUB) whose matching
// keys the client keeps in its store. Its callback hears of every key the
// query's state lists or removes, and of every later change to a matching
// key; a deleted key arrives with Type TypeNone.
type Query struct {
	c       *Client
	pattern string
	fn      func(key string, v Value)
}

// Query registers a live query for pattern, sending QSUB now when
// connected and on every later connection. Several queries of one pattern
// share the server's registration. A refusal (more than 64 live queries,
// more than 10 000 matching keys) is reported to OnError.
func (c *Client) Query(pattern string, fn func(key string, v Value)) *Query {
	q := &Query{c: c, pattern: pattern, fn: fn}
	c.mu.Lock()
	c.queries[pattern] = append(c.queries[pattern], q)
	if cn := c.cn; cn != nil && !c.closed {
		cn.send(pending{kind: pendQSub, what: "QSUB " + pattern}, bQSUB, []byte(pattern))
	}
	c.mu.Unlock()
	return q
}

// Pattern returns the query's pattern.
func (q *Query) Pattern() string { return q.pattern }

// Close removes the query; the last one of its pattern sends QUNSUB, and
// the keys no other registration covers leave the store.
func (q *Query) Close() {
	c := q.c
	c.mu.Lock()
	if !unregister(c.queries, q.pattern, q) {
		c.mu.Unlock()
		return
	}
	cn := c.cn
	if cn != nil {
		c.unquerying[q.pattern]++
		cn.send(pending{kind: pendQUnsub, what: "QUNSUB " + q.pattern, name: q.pattern}, bQUNSUB, []byte(q.pattern))
	}
	c.mu.Unlock()
	if cn == nil {
		c.retain()
	}
}

// Watch is a watched key (KWATCH): its callback hears of the key's changes
// by other connections, which arrive as keychange frames.
type Watch struct {
	c   *Client
	key string
	fn  func(key string, v Value)
}

// Watch watches key, sending KWATCH now when connected and on every later
// connection. Keychange frames carry a string's value, a nil for a deleted
// key, or the type of another value, whose content only a live query or
// the SYNC scope brings. KWATCH returns no state: after a reconnect the
// local value stays as last known until the key's next change (a live
// query re-hydrates instead).
func (c *Client) Watch(key string, fn func(key string, v Value)) *Watch {
	w := &Watch{c: c, key: key, fn: fn}
	c.mu.Lock()
	first := len(c.watches[key]) == 0
	c.watches[key] = append(c.watches[key], w)
	if cn := c.cn; cn != nil && !c.closed && first {
		cn.send(pending{kind: pendKWatch, what: "KWATCH " + key}, bKWATCH, []byte(key))
	}
	c.mu.Unlock()
	return w
}

// Close stops the watch; the last one of its key sends KUNWATCH.
func (w *Watch) Close() {
	c := w.c
	c.mu.Lock()
	if !unregister(c.watches, w.key, w) {
		c.mu.Unlock()
		return
	}
	cn := c.cn
	if cn != nil {
		c.unwatching[w.key]++
		cn.send(pending{kind: pendKUnwatch, what: "KUNWATCH " + w.key, keys: []string{w.key}}, bKUNWATCH, []byte(w.key))
	}
	c.mu.Unlock()
	if cn == nil {
		c.retain()
	}
}

// Subscription is a pub/sub subscription to a channel or a pattern.
type Subscription struct {
	c       *Client
	name    string
	pattern bool
	fn      func(Message)
}

// Subscribe subscribes to channel; fn hears each message. SUBSCRIBE is
// sent now when connected and on every later connection (never wrapped:
// a replayed subscription must run again).
func (c *Client) Subscribe(channel string, fn func(Message)) *Subscription {
	return c.subscribe(channel, false, fn)
}

// PSubscribe subscribes to the channels matching pattern.
func (c *Client) PSubscribe(pattern string, fn func(Message)) *Subscription {
	return c.subscribe(pattern, true, fn)
}

func (c *Client) subscribe(name string, pattern bool, fn func(Message)) *Subscription {
	s := &Subscription{c: c, name: name, pattern: pattern, fn: fn}
	c.mu.Lock()
	m := c.subMap(pattern)
	first := len(m[name]) == 0
	m[name] = append(m[name], s)
	if cn := c.cn; cn != nil && !c.closed && first {
		cmd, tag := bSUBSCRIBE, "subscribe"
		if pattern {
			cmd, tag = bPSUB, "psubscribe"
		}
		cn.send(pending{kind: pendSub, what: string(cmd) + " " + name, confirm: tag}, cmd, []byte(name))
	}
	c.mu.Unlock()
	return s
}

func (c *Client) subMap(pattern bool) map[string][]*Subscription {
	if pattern {
		return c.pchannels
	}
	return c.channels
}

// Close ends the subscription; the last one of its channel or pattern
// unsubscribes.
func (s *Subscription) Close() {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if !unregister(c.subMap(s.pattern), s.name, s) {
		return
	}
	if cn := c.cn; cn != nil {
		cmd, tag := bUNSUB, "unsubscribe"
		if s.pattern {
			cmd, tag = bPUNSUB, "punsubscribe"
		}
		cn.send(pending{kind: pendSub, what: string(cmd) + " " + s.name, confirm: tag}, cmd, []byte(s.name))
	}
}

// unregister removes v from the registrations of k in m, and reports
// whether it was the last one there: then k is gone from m and the server
// must be told to stop sending for it.
func unregister[T comparable](m map[string][]T, k string, v T) bool {
	vs := m[k]
	i := slices.Index(vs, v)
	if i < 0 {
		return false
	}
	vs = slices.Delete(vs, i, i+1)
	if len(vs) > 0 {
		m[k] = vs
		return false
	}
	delete(m, k)
	return true
}

package server

import (
	"fmt"
	"strings"
)

// pubsubCommands are the publish/subscribe commands. The subscribe family
// is allowed in RESP2 subscribed mode; all of them except PUBSUB are
// connection-scoped, so DEDUP never wraps them.
func pubsubCommands() []*Command {
	sub := FlagPubSub | FlagNoScript | FlagLoading | FlagStale | FlagSubContext | FlagConnection | FlagClientOwned | FlagStateful
	pub := FlagPubSub | FlagLoading | FlagStale | FlagFast | FlagConnection
	info := FlagPubSub | FlagLoading | FlagStale
	return []*Command{
		{Name: "subscribe", Arity: -2, Flags: sub, FirstChan: 1, LastChan: -1, Group: "pubsub", Since: "2.0.0", Syntax: "channel [channel ...]", Summary: "Listen for messages published to the given channels", Complexity: "O(N) where N is the number of channels to subscribe to.", Categories: "pubsub slow", Handler: cmdSubscribe},
		{Name: "psubscribe", Arity: -2, Flags: sub, Group: "pubsub", Since: "2.0.0", Syntax: "pattern [pattern ...]", Summary: "Listen for messages published to channels matching the given patterns", Complexity: "O(N) where N is the number of patterns the client is already subscribed to.", Categories: "pubsub slow", Handler: cmdPSubscribe},
		{Name: "ssubscribe", Arity: -2, Flags: sub, FirstKey: 1, LastKey: -1, Step: 1, FirstChan: 1, LastChan: -1, Group: "pubsub", KeySpecs: "not_key", Since: "7.0.0", Syntax: "shardchannel [shardchannel ...]", Summary: "Listen for messages published to the given shard channels", Complexity: "O(N) where N is the number of shard channels to subscribe to.", Categories: "pubsub slow", Handler: cmdSSubscribe},
		{Name: "unsubscribe", Arity: -1, Flags: sub, Group: "pubsub", Since: "2.0.0", Syntax: "[channel [channel ...]]", Summary: "Stop listening for messages posted to the given channels", Complexity: "O(N) where N is the number of clients already subscribed to a channel.", Categories: "pubsub slow", Handler: cmdUnsubscribe},
		{Name: "punsubscribe", Arity: -1, Flags: sub, Group: "pubsub", Since: "2.0.0", Syntax: "[pattern [pattern ...]]", Summary: "Stop listening for messages posted to channels matching the given patterns", Complexity: "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).", Categories: "pubsub slow", Handler: cmdPUnsubscribe},
		{Name: "sunsubscribe", Arity: -1, Flags: sub, FirstKey: 1, LastKey: -1, Step: 1, Group: "pubsub", KeySpecs: "not_key", Since: "7.0.0", Syntax: "[shardchannel [shardchannel ...]]", Summary: "Stop listening for messages posted to the given shard channels", Complexity: "O(N) where N is the number of clients already subscribed to a shard channel.", Categories: "pubsub slow", Handler: cmdSUnsubscribe},
		{Name: "publish", Arity: 3, Flags: pub | FlagMayReplicate, FirstChan: 1, LastChan: 1, Group: "pubsub", Since: "2.0.0", Syntax: "channel message", Summary: "Post a message to a channel", Complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).", Categories: "pubsub fast", Handler: cmdPublish},
		{Name: "spublish", Arity: 3, Flags: pub | FlagMayReplicate, FirstKey: 1, LastKey: 1, Step: 1, FirstChan: 1, LastChan: 1, Group: "pubsub", KeySpecs: "not_key", Since: "7.0.0", Syntax: "shardchannel message", Summary: "Post a message to a shard channel", Complexity: "O(N) where N is the number of clients subscribed to the receiving shard channel.", Categories: "pubsub fast", Handler: cmdSPublish},
		{Name: "pubsub", Arity: -2, Group: "pubsub", Since: "2.8.0", Summary: "A container for Pub/Sub commands", Complexity: "Depends on subcommand.", Categories: "slow", Subs: []*Command{
			{Name: "channels", Arity: -2, Flags: info | FlagAllChans, Since: "2.8.0", Syntax: "[pattern]", Summary: "List active channels", Complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)", Categories: "pubsub slow", Handler: cmdPubSubChannels},
			{Name: "numpat", Arity: 2, Flags: info, Since: "2.8.0", Summary: "Get the count of unique patterns pattern subscriptions", Complexity: "O(1)", Categories: "pubsub slow", Handler: cmdPubSubNumPat},
			{Name: "numsub", Arity: -2, Flags: info, FirstChan: 2, LastChan: -1, Since: "2.8.0", Syntax: "[channel [channel ...]]", Summary: "Get the count of subscribers for channels", Complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels", Categories: "pubsub slow", Handler: cmdPubSubNumSub},
			{Name: "shardchannels", Arity: -2, Flags: info | FlagAllChans, Since: "7.0.0", Syntax: "[pattern]", Summary: "List active shard channels", Complexity: "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).", Categories: "pubsub slow", Handler: cmdPubSubShardChannels},
			{Name: "shardnumsub", Arity: -2, Flags: info, FirstChan: 2, LastChan: -1, Since: "7.0.0", Syntax: "[shardchannel [shardchannel ...]]", Summary: "Get the count of subscribers for shard channels", Complexity: "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels", Categories: "pubsub slow", Handler: cmdPubSubShardNumSub},
			{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, Since: "6.2.0", Summary: "Show helpful text about the different subcommands", Complexity: "O(1)", Categories: "slow", Handler: cmdPubSubHelp},
		}},
	}
}

// The confirmation tags of the subscribe family, by subscription kind.
var (
	subscribeTags   = [numKinds]string{"subscribe", "psubscribe", "ssubscribe"}
	unsubscribeTags = [numKinds]string{"unsubscribe", "punsubscribe", "sunsubscribe"}
)

func cmdSubscribe(s *Session)  { s.subscribeCmd(kindChannel) }
func cmdPSubscribe(s *Session) { s.subscribeCmd(kindPattern) }

func cmdSSubscribe(s *Session) {
	if s.inExec {
		// Redis refuses it to clients that expect one reply per command.
		s.W.Error("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
		return
	}
	s.subscribeCmd(kindShard)
}

func cmdUnsubscribe(s *Session)  { s.unsubscribeCmd(kindChannel) }
func cmdPUnsubscribe(s *Session) { s.unsubscribeCmd(kindPattern) }
func cmdSUnsubscribe(s *Session) { s.unsubscribeCmd(kindShard) }

// subscribeCmd subscribes the session to every argument, confirming each
// with ["subscribe", name, count] (a push in RESP3). On the WebSocket port
// the command replies once, with the count afterwards (SPEC section 3).
func (s *Session) subscribeCmd(kind int) {
	r := &s.srv.pubsub
	r.mu.Lock()
	for _, name := range s.Args[1:] {
		r.add(s, kind, name)
		if !s.WS {
			s.confirm(subscribeTags[kind], name, false, kind)
		}
	}
	r.mu.Unlock()
	s.updatePubSubCounts()
	if s.WS {
		s.W.Int(int64(s.ps.kindCount(kind)))
	}
}

// unsubscribeCmd unsubscribes the session from every argument, or from
// everything of the kind when there is none, confirming each name. With
// nothing to unsubscribe from, the one confirmation carries a nil name.
func (s *Session) unsubscribeCmd(kind int) {
	r := &s.srv.pubsub
	tag := unsubscribeTags[kind]
	r.mu.Lock()
	if len(s.Args) == 1 {
		all := s.ps.names(kind)
		for _, name := range all {
			r.remove(s, kind, name)
			if !s.WS {
				s.confirm(tag, []byte(name), false, kind)
			}
		}
		if len(all) == 0 && !s.WS {
			s.confirm(tag, nil, true, kind)
		}
	} else {
		for _, name := range s.Args[1:] {
			r.remove(s, kind, string(name))
			if !s.WS {
				s.confirm(tag, name, false, kind)
			}
		}
	}
	r.mu.Unlock()
	s.updatePubSubCounts()
	if s.WS {
		s.W.Int(int64(s.ps.kindCount(kind)))
	}
}

// confirm writes one (un)subscribe confirmation; null writes a nil name.
func (s *Session) confirm(tag string, name []byte, null bool, kind int) {
	defer s.markPush(len(s.W.B))
	s.W.Push(3)
	s.W.BulkString(tag)
	if null {
		s.W.Null()
	} else {
		s.W.Bulk(name)
	}
	s.W.Int(int64(s.ps.kindCount(kind)))
}

func cmdPublish(s *Session) {
	s.W.Int(int64(s.srv.pubsub.publish(s, false, s.Args[1], s.Args[2])))
}

func cmdSPublish(s *Session) {
	s.W.Int(int64(s.srv.pubsub.publish(s, true, s.Args[1], s.Args[2])))
}

func cmdPubSubChannels(s *Session)      { s.pubsubChannels(false) }
func cmdPubSubShardChannels(s *Session) { s.pubsubChannels(true) }

// pubsubChannels replies PUBSUB CHANNELS / SHARDCHANNELS [pattern].
func (s *Session) pubsubChannels(shard bool) {
	if len(s.Args) > 3 {
		s.W.Error(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%.128s'. Try %s HELP.", s.Args[1], strings.ToUpper(string(s.Args[0]))))
		return
	}
	var chans []string
	if len(s.Args) == 3 {
		chans = s.srv.pubsub.activeChannels(shard, string(s.Args[2]), true)
	} else {
		chans = s.srv.pubsub.activeChannels(shard, "", false)
	}
	s.W.Array(len(chans))
	for _, ch := range chans {
		s.W.BulkString(ch)
	}
}

func cmdPubSubNumSub(s *Session)      { s.pubsubNumSub(false) }
func cmdPubSubShardNumSub(s *Session) { s.pubsubNumSub(true) }

// pubsubNumSub replies PUBSUB NUMSUB / SHARDNUMSUB: a flat array of
// channel, count pairs (an array in RESP3 too, as Redis replies).
func (s *Session) pubsubNumSub(shard bool) {
	chans := s.Args[2:]
	counts := s.srv.pubsub.numSub(shard, chans)
	s.W.Array(2 * len(chans))
	for i, ch := range chans {
		s.W.Bulk(ch)
		s.W.Int(int64(counts[i]))
	}
}

func cmdPubSubNumPat(s *Session) {
	_, pats, _ := s.srv.pubsub.stats()
	s.W.Int(int64(pats))
}

func cmdPubSubHelp(s *Session) {
	lines := []string{
		"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CHANNELS [<pattern>]",
		"    Return the currently active channels matching a <pattern> (default: '*').",
		"NUMPAT",
		"    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]",
		"    Return the number of subscribers for the specified channels, excluding",
		"    pattern subscriptions(default: no channels).",
		"SHARDCHANNELS [<pattern>]",
		"    Return the currently active shard level channels matching a <pattern> (default: '*').",
		"SHARDNUMSUB [<shardchannel> ...]",
		"    Return the number of subscribers for the specified shard level channel(s)",
		"HELP",
		"    Prints this help.",
	}
	s.W.Array(len(lines))
	for _, l := range lines {
		s.W.Simple(l)
	}
}

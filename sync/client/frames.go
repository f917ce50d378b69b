package client

import (
	"bytes"

	"github.com/recached/recached/resp"
)

// FrameKind is the seed's taxonomy of the frames a client receives
// ("Frame taxonomy"), plus the RESP3 subscription confirmations that the
// RESP port sends as pushes.
type FrameKind uint8

// The frame kinds.
const (
	// FrameReply answers the oldest outstanding command: any value not
	// matching the kinds below, qstate included (it is the reply to its
	// QSUB and also state to apply).
	FrameReply FrameKind = iota
	// FrameMutation is a RESP3 push holding a replayable effect.
	FrameMutation
	// FramePubSub is a push whose first element is message, pmessage or
	// smessage.
	FramePubSub
	// FrameKeychange is the array ["keychange", key, value].
	FrameKeychange
	// FrameConfirm is a push confirming (un)subscription: on the RESP port
	// in RESP3 it is the reply to SUBSCRIBE and its kin, one per channel.
	// The WebSocket port replies to those commands with an integer.
	FrameConfirm
)

var frameKindNames = [...]string{"reply", "mutation", "pubsub", "keychange", "confirm"}

// String names the kind.
func (k FrameKind) String() string {
	if int(k) < len(frameKindNames) {
		return frameKindNames[k]
	}
	return "unknown"
}

// Classify returns the kind of frame v. interested tells whether a key is
// watched or matches a live query; an array shaped like a keychange for a
// key the client has no interest in cannot be a keychange (the server sends
// none), so it is a reply that happens to start with the bulk "keychange".
// nil interested accepts every key.
func Classify(v resp.Value, interested func(key []byte) bool) FrameKind {
	switch {
	case v.Kind == '>' && !v.Null:
		switch tag := tagOf(v); {
		case tag == nil:
		case resp.EqualFold(tag, "message"), resp.EqualFold(tag, "pmessage"), resp.EqualFold(tag, "smessage"):
			return FramePubSub
		case isConfirmTag(tag):
			return FrameConfirm
		}
		return FrameMutation
	case v.Kind == '*' && !v.Null && len(v.Elems) == 3:
		if tag := tagOf(v); tag == nil || v.Elems[0].Kind != '$' || !bytes.Equal(tag, tagKeychange) {
			return FrameReply
		}
		k, val := v.Elems[1], v.Elems[2]
		if k.Kind != '$' || k.Null {
			return FrameReply
		}
		switch {
		case val.Kind == '$', val.Kind == '_', val.Kind == '+':
		default:
			return FrameReply
		}
		if interested != nil && !interested(k.Str) {
			return FrameReply
		}
		return FrameKeychange
	}
	return FrameReply
}

var (
	tagKeychange = []byte("keychange")
	tagQState    = []byte("qstate")
)

// isQState reports whether v is a qstate array: ["qstate", pattern, k1,
// v1, …].
func isQState(v resp.Value) bool {
	return v.Kind == '*' && !v.Null && len(v.Elems) >= 2 && len(v.Elems)%2 == 0 &&
		v.Elems[0].Kind == '$' && bytes.Equal(v.Elems[0].Str, tagQState)
}

// tagOf returns the first element of an aggregate when it is a string.
func tagOf(v resp.Value) []byte {
	if len(v.Elems) == 0 {
		return nil
	}
	e := v.Elems[0]
	if (e.Kind == '$' || e.Kind == '+') && !e.Null {
		return e.Str
	}
	return nil
}

// isConfirmTag reports whether tag is one of the (un)subscribe
// confirmations.
func isConfirmTag(tag []byte) bool {
	for _, t := range confirmTags {
		if resp.EqualFold(tag, t) {
			return true
		}
	}
	return false
}

var confirmTags = []string{"subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe"}

// elemStrings returns the elements of an aggregate as byte strings: bulk
// and simple strings as they are, integers in decimal. ok is false when an
// element is neither.
func elemStrings(v resp.Value) (args [][]byte, ok bool) {
	args = make([][]byte, len(v.Elems))
	for i, e := range v.Elems {
		switch {
		case (e.Kind == '$' || e.Kind == '+') && !e.Null:
			args[i] = e.Str
		case e.Kind == ':':
			args[i] = []byte(itoa(e.Int))
		default:
			return nil, false
		}
	}
	return args, true
}

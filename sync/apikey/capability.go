package apikey

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/recached/recached/server/keyspace"
)

// The operations a capability grants on a channel (SPEC section 9).
const (
	// OpSubscribe covers Subscribe, Attach and rewind.
	OpSubscribe = "subscribe"
	// OpPublish covers Publish.
	OpPublish = "publish"
	// OpPresence covers presence enter, update and leave.
	OpPresence = "presence"
	// OpAll, in a file or a token, stands for every operation, as Ably's
	// "*" does.
	OpAll = "*"
)

// Capability maps a channel glob (Redis KEYS matching, keyspace.Match) to
// the operations it allows. An operation on a channel is allowed when any
// glob that matches the channel lists it. The nil Capability allows
// nothing.
type Capability map[string][]string

// Allows reports whether op is allowed on channel.
func (c Capability) Allows(channel, op string) bool {
	for glob, ops := range c {
		if !keyspace.Match(glob, channel) {
			continue
		}
		for _, o := range ops {
			if o == op || o == OpAll {
				return true
			}
		}
	}
	return false
}

// Intersect returns the capability allowing what both c and o allow, used
// for a token's x-capability against its key's. For each glob of c and
// glob of o where one contains the other (the same glob, "*", a literal
// channel the other matches, or a "prefix*" glob whose prefix starts the
// other), the narrower glob keeps the operations both list. Two globs that
// overlap without either containing the other (a*b against ab*) are
// dropped: the result may allow less than the exact intersection, never
// more.
func (c Capability) Intersect(o Capability) Capability {
	out := Capability{}
	for g1, ops1 := range c {
		for g2, ops2 := range o {
			var g string
			switch {
			case contains(g1, g2):
				g = g2
			case contains(g2, g1):
				g = g1
			default:
				continue
			}
			ops := commonOps(ops1, ops2)
			if len(ops) == 0 {
				continue
			}
			out[g] = mergeOps(out[g], ops)
		}
	}
	return out
}

// contains reports whether every channel glob b matches is matched by
// glob a, as far as a simple test can tell (false when unsure).
func contains(a, b string) bool {
	switch {
	case a == b || a == "*":
		return true
	case !hasMeta(b):
		return keyspace.Match(a, b)
	}
	prefix, ok := strings.CutSuffix(a, "*")
	return ok && !hasMeta(prefix) && strings.HasPrefix(b, prefix)
}

// hasMeta reports whether a glob has any character with a meaning.
func hasMeta(g string) bool { return strings.ContainsAny(g, `*?[\`) }

// expandOps returns ops with OpAll replaced by every operation.
func expandOps(ops []string) []string {
	for _, o := range ops {
		if o == OpAll {
			return []string{OpPresence, OpPublish, OpSubscribe}
		}
	}
	return ops
}

// commonOps returns the operations both lists allow, sorted.
func commonOps(a, b []string) []string {
	a, b = expandOps(a), expandOps(b)
	var out []string
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = mergeOps(out, []string{x})
			}
		}
	}
	return out
}

// mergeOps returns the sorted union of a and b without duplicates.
func mergeOps(a, b []string) []string {
	out := append(append([]string(nil), a...), b...)
	sort.Strings(out)
	n := 0
	for i, o := range out {
		if i == 0 || o != out[n-1] {
			out[n] = o
			n++
		}
	}
	return out[:n]
}

// validate checks that every glob is non-empty and every operation known.
func (c Capability) validate() error {
	for glob, ops := range c {
		if glob == "" {
			return fmt.Errorf("capability: empty channel glob")
		}
		for _, o := range ops {
			switch o {
			case OpSubscribe, OpPublish, OpPresence, OpAll:
			default:
				return fmt.Errorf("capability %q: unknown operation %q (want subscribe, publish, presence or *)", glob, o)
			}
		}
	}
	return nil
}

// ParseCapability parses a capability's JSON text, an object mapping each
// channel glob to an array of operations, checking the operations.
func ParseCapability(text []byte) (Capability, error) {
	var c Capability
	if err := json.Unmarshal(text, &c); err != nil {
		return nil, fmt.Errorf("capability: %w", err)
	}
	if c == nil {
		return nil, fmt.Errorf("capability: want a JSON object, got null")
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

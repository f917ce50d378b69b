package resp

// Limits bounds the requests a Parser accepts beyond the protocol's own
// limits (MaxBulkLen, MaxRequest). A zero field sets no bound.
type Limits struct {
	// MaxArgs is the largest multibulk count accepted.
	MaxArgs int
	// MaxBulk is the largest bulk string length accepted.
	MaxBulk int
	// MaxBulkLen is proto-max-bulk-len: a longer bulk string is the
	// protocol error "invalid bulk length", as past MaxBulkLen (the
	// package's constant, which bounds it too).
	MaxBulkLen int
}

// UnauthenticatedLimits are Redis's bounds for a client that has not yet
// authenticated when a password is required: a multibulk count over 10 or
// a bulk string over 16 384 bytes is a protocol error, so that such a
// client cannot make the server hold large requests.
var UnauthenticatedLimits = Limits{MaxArgs: 10, MaxBulk: 16384}

// The protocol errors of requests past a Parser's Limits. Redis closes the
// connection after answering them.
var (
	ErrUnauthenticatedMultibulk = &ProtocolError{"unauthenticated multibulk length"}
	ErrUnauthenticatedBulk      = &ProtocolError{"unauthenticated bulk length"}
)

// IsLimitError reports whether err is a request past a Parser's Limits.
func IsLimitError(err error) bool {
	return err == ErrUnauthenticatedMultibulk || err == ErrUnauthenticatedBulk
}

// SetLimits sets the bounds later requests are checked against; the zero
// Limits removes them. A request already partly parsed is checked against
// the new bounds as it goes on.
func (p *Parser) SetLimits(l Limits) { p.limits = l }

// MaxFrame returns the largest WebSocket frame a request within l can
// take, or 0 when l bounds nothing: every argument at its largest, with
// its length line, and the count line.
func (l Limits) MaxFrame() int {
	if l.MaxArgs == 0 || l.MaxBulk == 0 {
		return 0
	}
	const line = 24 // "$" or "*", 20 digits, CRLF, spare
	return line + l.MaxArgs*(line+l.MaxBulk+2)
}

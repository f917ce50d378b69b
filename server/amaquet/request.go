package amaquet

import (
	"encoding/base64"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// commandRequest is a decoded COMMAND payload: {"command":…,"args":[…]}
// or {"transaction":[[…],…]}, with an optional "db". Arguments are JSON
// strings or {"base64":"…"}. Decoding reuses the request's buffers, so a
// request that runs inline costs no allocation once they have grown; the
// arguments alias the payload where a string has no escapes.
type commandRequest struct {
	args  [][]byte   // the command and its arguments
	txn   [][][]byte // a transaction's commands
	isTxn bool
	db    int

	// spans are the arguments as [start,end) of the payload (end < 0:
	// of dec, at -start-1 … -end-1), cut into args and txn at the end so
	// that growing dec moves nothing.
	spans  [][2]int
	counts []int // the transaction's commands' lengths, in spans
	dec    []byte
	flat   [][]byte
}

// errBadRequest is a payload that is not a valid COMMAND request.
type errBadRequest string

func (e errBadRequest) Error() string { return string(e) }

// parse decodes p into r.
func (r *commandRequest) parse(p []byte) error {
	if r.parsePlain(p) {
		return nil
	}
	return r.parseFull(p)
}

// parsePlain decodes the spelling clients write for a command,
// {"command":"NAME","args":["a","b",…]} with no space and strings of
// printable ASCII without escapes, in one pass; it reports false, having
// decided nothing, for anything else, which parseFull then reads. It
// accepts only what parseFull accepts, with the same result (the fuzz
// target checks it): a fast path, not a second grammar.
func (r *commandRequest) parsePlain(p []byte) bool {
	const head, mid = `{"command":"`, `,"args":[`
	if len(p) < len(head)+3 || string(p[:len(head)]) != head || p[len(p)-1] != '}' {
		return false
	}
	end := len(p) - 1 // the closing brace
	i := plainEnd(p, len(head))
	if i == len(head) || i >= end || p[i] != '"' {
		return false
	}
	flat := append(r.flat[:0], p[len(head):i:i])
	i++
	if i < end {
		if end-i < len(mid)+1 || string(p[i:i+len(mid)]) != mid || p[end-1] != ']' {
			return false
		}
		i += len(mid)
		for last := end - 1; i < last; {
			if p[i] != '"' {
				return false
			}
			j := plainEnd(p, i+1)
			if j >= last || p[j] != '"' {
				return false
			}
			flat = append(flat, p[i+1:j:j])
			i = j + 1
			if p[i] == ',' && i+1 < last {
				i++
			} else if i != last {
				return false
			}
		}
	}
	r.flat, r.args, r.txn, r.isTxn, r.db = flat, flat, r.txn[:0], false, 0
	return true
}

// plainEnd returns the index of the first byte from p[i] on that is not
// printable ASCII or is a quote or a backslash (len(p) if none).
func plainEnd(p []byte, i int) int {
	for i < len(p) && p[i]-0x20 < 0x5f && p[i] != '"' && p[i] != '\\' {
		i++
	}
	return i
}

// parseFull decodes p into r: any COMMAND request.
func (r *commandRequest) parseFull(p []byte) error {
	r.args, r.txn, r.isTxn, r.db = r.args[:0], r.txn[:0], false, 0
	// spans[0] is the command's place, filled by "command".
	r.spans, r.counts, r.dec = append(r.spans[:0], [2]int{}), r.counts[:0], r.dec[:0]
	d := decoder{p: p, r: r}
	if err := d.request(); err != nil {
		return err
	}
	r.cut(p)
	return nil
}

// cut turns the spans into argument slices.
func (r *commandRequest) cut(p []byte) {
	r.flat = r.flat[:0]
	spans := r.spans
	if r.isTxn {
		spans = spans[1:]
	}
	for _, s := range spans {
		if s[1] >= 0 {
			r.flat = append(r.flat, p[s[0]:s[1]:s[1]])
		} else {
			a, b := -s[0]-1, -s[1]-1
			r.flat = append(r.flat, r.dec[a:b:b])
		}
	}
	if !r.isTxn {
		r.args = r.flat
		return
	}
	i := 0
	for _, n := range r.counts {
		r.txn = append(r.txn, r.flat[i:i+n:i+n])
		i += n
	}
}

// decoder is a cursor over a COMMAND payload.
type decoder struct {
	p []byte
	i int
	r *commandRequest
}

func (d *decoder) fail(msg string) error {
	return errBadRequest(msg + " at offset " + strconv.Itoa(d.i))
}

// ws skips JSON whitespace.
func (d *decoder) ws() {
	p, i := d.p, d.i
	for i < len(p) && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r') {
		i++
	}
	d.i = i
}

// peek returns the next non-space byte, 0 at the end.
func (d *decoder) peek() byte {
	d.ws()
	if d.i >= len(d.p) {
		return 0
	}
	return d.p[d.i]
}

// expect consumes byte c.
func (d *decoder) expect(c byte) error {
	if d.peek() != c {
		return d.fail("expected '" + string(c) + "'")
	}
	d.i++
	return nil
}

// request decodes the top-level object.
func (d *decoder) request() error {
	if err := d.expect('{'); err != nil {
		return err
	}
	var haveCmd, haveArgs, haveTxn, haveDB bool
	first := true
	for {
		if d.peek() == '}' && first {
			d.i++
			break
		}
		first = false
		name, err := d.key()
		if err != nil {
			return err
		}
		switch string(name) {
		case "command":
			if haveCmd {
				return d.fail(`duplicate field "command"`)
			}
			haveCmd = true
			if d.peek() != '"' {
				return d.fail(`"command" must be a string`)
			}
			if d.r.spans[0], err = d.str(); err != nil {
				return err
			}
		case "args":
			if haveArgs {
				return d.fail(`duplicate field "args"`)
			}
			haveArgs = true
			if _, err := d.argList(); err != nil {
				return err
			}
		case "transaction":
			if haveTxn {
				return d.fail(`duplicate field "transaction"`)
			}
			haveTxn = true
			if err := d.transaction(); err != nil {
				return err
			}
		case "db":
			if haveDB {
				return d.fail(`duplicate field "db"`)
			}
			haveDB = true
			n, err := d.int()
			if err != nil {
				return err
			}
			d.r.db = n
		default:
			return d.fail("unknown field " + strconv.Quote(string(name)))
		}
		c := d.peek()
		d.i++
		if c == '}' {
			break
		}
		if c != ',' {
			d.i--
			return d.fail("expected ',' or '}'")
		}
	}
	if d.peek() != 0 {
		return d.fail("data after the request object")
	}
	switch {
	case haveTxn && (haveCmd || haveArgs):
		return errBadRequest(`a request has "command" or "transaction", not both`)
	case haveTxn:
		d.r.isTxn = true
	case !haveCmd:
		return errBadRequest(`missing field "command"`)
	default:
		if sp := d.r.spans[0]; sp[0] == sp[1] {
			return errBadRequest(`"command" is empty`)
		}
	}
	return nil
}

// key decodes an object key and its colon. Keys are compared as written:
// the request's field names never need escapes.
func (d *decoder) key() ([]byte, error) {
	if d.peek() != '"' {
		return nil, d.fail("expected a field name")
	}
	p := d.p
	start := d.i + 1
	i := start
	for i < len(p) && p[i] != '"' && p[i] != '\\' && p[i] >= 0x20 {
		i++
	}
	d.i = i
	if i >= len(p) || p[i] != '"' {
		return nil, d.fail("bad field name")
	}
	name := p[start:i]
	i++
	if i < len(p) && p[i] == ':' {
		// The usual spelling, with no space before the colon.
		d.i = i + 1
		return name, nil
	}
	d.i = i
	return name, d.expect(':')
}

// argList decodes [arg, …] into spans and returns how many it added.
func (d *decoder) argList() (int, error) {
	if err := d.expect('['); err != nil {
		return 0, err
	}
	n := 0
	if d.peek() == ']' {
		d.i++
		return 0, nil
	}
	for {
		sp, err := d.arg()
		if err != nil {
			return 0, err
		}
		d.r.spans = append(d.r.spans, sp)
		n++
		c := d.peek()
		d.i++
		if c == ']' {
			return n, nil
		}
		if c != ',' {
			d.i--
			return 0, d.fail("expected ',' or ']'")
		}
	}
}

// transaction decodes [[cmd, args…], …].
func (d *decoder) transaction() error {
	if err := d.expect('['); err != nil {
		return err
	}
	if d.peek() == ']' {
		return d.fail("a transaction needs at least one command")
	}
	for {
		if d.peek() != '[' {
			return d.fail("a transaction's commands are arrays")
		}
		n, err := d.argList()
		if err != nil {
			return err
		}
		if n == 0 {
			return d.fail("a transaction's command is empty")
		}
		d.r.counts = append(d.r.counts, n)
		c := d.peek()
		d.i++
		if c == ']' {
			return nil
		}
		if c != ',' {
			d.i--
			return d.fail("expected ',' or ']'")
		}
	}
}

// arg decodes a string or {"base64":"…"}.
func (d *decoder) arg() ([2]int, error) {
	switch d.peek() {
	case '"':
		return d.str()
	case '{':
		d.i++
		name, err := d.key()
		if err != nil {
			return [2]int{}, err
		}
		if string(name) != "base64" {
			return [2]int{}, d.fail(`an object argument is {"base64":"…"}`)
		}
		if d.peek() != '"' {
			return [2]int{}, d.fail(`"base64" must be a string`)
		}
		sp, err := d.str()
		if err != nil {
			return [2]int{}, err
		}
		if err := d.expect('}'); err != nil {
			return [2]int{}, err
		}
		return d.base64(sp)
	}
	return [2]int{}, d.fail("an argument is a string or {\"base64\":…}")
}

// base64 decodes the string at sp into dec.
func (d *decoder) base64(sp [2]int) ([2]int, error) {
	var text []byte
	if sp[1] >= 0 {
		text = d.p[sp[0]:sp[1]]
	} else {
		text = d.r.dec[-sp[0]-1 : -sp[1]-1]
	}
	dec := d.r.dec
	start := len(dec)
	need := base64.StdEncoding.DecodedLen(len(text))
	dec = append(dec, make([]byte, need)...)
	n, err := base64.StdEncoding.Decode(dec[start:], text)
	if err != nil {
		return [2]int{}, errBadRequest("bad base64 argument: " + err.Error())
	}
	d.r.dec = dec[:start+n]
	return [2]int{-start - 1, -(start + n) - 1}, nil
}

// str decodes a JSON string: a span of the payload when it has no escape,
// else of dec. It checks that the string is UTF-8.
func (d *decoder) str() ([2]int, error) {
	p := d.p
	start := d.i + 1 // after '"'
	i := start
	// Printable ASCII other than the quote and the backslash needs no
	// look: the common case, one comparison per byte.
	for i < len(p) && p[i]-0x20 < 0x60 && p[i] != '"' && p[i] != '\\' {
		i++
	}
	ascii := true
	for ; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '"':
			d.i = i
			if !ascii && !utf8.Valid(p[start:i]) {
				return [2]int{}, d.fail("a string is not UTF-8")
			}
			d.i = i + 1
			return [2]int{start, i}, nil
		case c == '\\':
			d.i = i
			return d.escaped(start)
		case c < 0x20:
			d.i = i
			return [2]int{}, d.fail("control character in a string")
		case c >= 0x80:
			ascii = false
		}
	}
	d.i = i
	return [2]int{}, d.fail("unterminated string")
}

// escaped decodes the rest of a string that has escapes, from start, into
// dec.
func (d *decoder) escaped(start int) ([2]int, error) {
	dec := d.r.dec
	from := len(dec)
	dec = append(dec, d.p[start:d.i]...)
	for d.i < len(d.p) {
		c := d.p[d.i]
		switch {
		case c == '"':
			d.i++
			if !utf8.Valid(dec[from:]) {
				return [2]int{}, d.fail("a string is not UTF-8")
			}
			d.r.dec = dec
			return [2]int{-from - 1, -len(dec) - 1}, nil
		case c < 0x20:
			return [2]int{}, d.fail("control character in a string")
		case c != '\\':
			dec = append(dec, c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.p) {
			break
		}
		e := d.p[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			dec = append(dec, e)
		case 'b':
			dec = append(dec, '\b')
		case 'f':
			dec = append(dec, '\f')
		case 'n':
			dec = append(dec, '\n')
		case 'r':
			dec = append(dec, '\r')
		case 't':
			dec = append(dec, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return [2]int{}, d.fail(`bad \u escape`)
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if d.i+1 < len(d.p) && d.p[d.i] == '\\' && d.p[d.i+1] == 'u' {
					d.i += 2
					if r2, ok = d.hex4(); !ok {
						return [2]int{}, d.fail(`bad \u escape`)
					}
				}
				r = utf16.DecodeRune(r, r2)
				if r == utf8.RuneError && r2 >= 0 && !utf16.IsSurrogate(r2) {
					// A lone surrogate before an ordinary escape: both
					// decode, the first as U+FFFD (as encoding/json does).
					dec = utf8.AppendRune(dec, utf8.RuneError)
					r = r2
				}
			}
			dec = utf8.AppendRune(dec, r)
		default:
			return [2]int{}, d.fail("bad escape")
		}
	}
	return [2]int{}, d.fail("unterminated string")
}

// hex4 decodes four hex digits.
func (d *decoder) hex4() (rune, bool) {
	if d.i+4 > len(d.p) {
		return 0, false
	}
	var r rune
	for _, c := range d.p[d.i : d.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	d.i += 4
	return r, true
}

// int decodes a non-negative JSON integer that fits an int32.
func (d *decoder) int() (int, error) {
	d.ws()
	start := d.i
	for d.i < len(d.p) && d.p[d.i] >= '0' && d.p[d.i] <= '9' {
		d.i++
	}
	digits := d.p[start:d.i]
	if len(digits) == 0 || len(digits) > 1 && digits[0] == '0' {
		return 0, d.fail(`"db" must be a non-negative integer`)
	}
	if d.i < len(d.p) && (d.p[d.i] == '.' || d.p[d.i] == 'e' || d.p[d.i] == 'E') {
		return 0, d.fail(`"db" must be a non-negative integer`)
	}
	n, err := strconv.ParseInt(string(digits), 10, 32)
	if err != nil {
		return 0, d.fail(`"db" is out of range`)
	}
	return int(n), nil
}

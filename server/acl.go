package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recached/recached/server/keyspace"
)

// ACL users as Redis 7.0 has them (src/acl.c): each user has passwords
// (SHA-256 hashes), an on/off flag and selectors, each a set of allowed
// commands, key patterns and channel patterns; a command runs when one of
// the user's selectors allows it. A command's categories come from its
// table row (Categories), nowhere else.

// aclCategoryNames are Redis's ACL categories in the order ACL CAT lists
// them and the command rules are described in; which commands belong to
// each is the command table's business.
var aclCategoryNames = []string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
	"blocking", "dangerous", "connection", "transaction", "scripting",
}

// Key pattern permissions (%R~, %W~; ~ is both).
const (
	aclRead  = 1
	aclWrite = 2
	aclRW    = aclRead | aclWrite
)

// The reasons a command is refused, in Redis's order of relevance.
const (
	aclOK = iota
	aclDeniedCmd
	aclDeniedKey
	aclDeniedAuth
	aclDeniedChannel
)

// User is an ACL user. Its rules are an immutable snapshot replaced as a
// whole by ACL SETUSER, so that checks on other goroutines read them
// without a lock.
type User struct {
	// Name is the user's name.
	Name string
	st   atomic.Pointer[userState]
	// limits is st when the user is restricted, nil when its rules allow
	// every command, key and channel: the dispatcher's single check.
	limits atomic.Pointer[userState]
}

func (u *User) state() *userState { return u.st.Load() }

func (u *User) store(st *userState) {
	u.st.Store(st)
	if st.unrestricted() {
		u.limits.Store(nil)
	} else {
		u.limits.Store(st)
	}
}

// userState is one version of a user's rules.
type userState struct {
	on, nopass bool
	sanitize   int8     // 0 unset, 1 sanitize-payload, 2 skip-sanitize-payload
	passwords  []string // lower-case hex SHA-256, in the order added
	sels       []*selector
}

func (st *userState) unrestricted() bool {
	r := st.sels[0]
	return r.allCmds && r.allKeys && r.allChans
}

func (st *userState) clone() *userState {
	c := *st
	c.passwords = append([]string(nil), st.passwords...)
	c.sels = make([]*selector, len(st.sels))
	for i, s := range st.sels {
		c.sels[i] = s.clone()
	}
	return &c
}

// selector is one set of permissions: a bit per command id (commands and
// subcommands), first arguments allowed of otherwise refused commands
// (+select|0), key and channel patterns.
type selector struct {
	bits []uint64
	// future is Redis's reserved bit: set by +@all, cleared by -@all; the
	// rules are then described starting from +@all.
	future bool
	// allCmds is set while every bit is (Redis's SELECTOR_FLAG_ALLCOMMANDS).
	allCmds   bool
	firstArgs map[int][]string
	keys      []keyPattern
	allKeys   bool
	chans     []string
	allChans  bool
}

type keyPattern struct {
	pat   string
	flags int
}

func (s *selector) clone() *selector {
	c := *s
	c.bits = append([]uint64(nil), s.bits...)
	c.keys = append([]keyPattern(nil), s.keys...)
	c.chans = append([]string(nil), s.chans...)
	if s.firstArgs != nil {
		c.firstArgs = make(map[int][]string, len(s.firstArgs))
		for k, v := range s.firstArgs {
			c.firstArgs[k] = append([]string(nil), v...)
		}
	}
	return &c
}

func (s *selector) bit(id int) bool { return s.bits[id/64]&(1<<(id%64)) != 0 }

func (s *selector) setBit(id int, on bool) {
	if on {
		s.bits[id/64] |= 1 << (id % 64)
		return
	}
	s.bits[id/64] &^= 1 << (id % 64)
	s.allCmds = false
}

// aclState is the server's users, the command ids and the ACL log.
type aclState struct {
	// mu serialises changes to users (SETUSER, DELUSER, LOAD) and guards
	// the map; checks read users' snapshots without it.
	mu    sync.Mutex
	users map[string]*User
	// def is the default user, never removed: new connections start as it.
	def *User
	// internal is the unlisted user of sessions with no connection (the
	// append-only log's replay): every permission, whatever default has.
	internal *User
	// cmds is every command and subcommand, subcommands after their
	// container, in name order; ids maps them back; cats holds, per
	// command id, a bit per category of aclCategoryNames.
	cmds []*Command
	ids  map[*Command]int
	cats []uint32

	pubsubAll atomic.Bool  // acl-pubsub-default allchannels
	maxLog    atomic.Int64 // acllog-max-len
	logMu     sync.Mutex
	log       []*aclLogEntry // newest first
}

// aclLogEntry is one ACL LOG entry; similar denials within a minute are
// counted in one.
type aclLogEntry struct {
	count                   int64
	reason, context, object string
	username, clientInfo    string
	created                 time.Time
}

func newACL(t *Table) *aclState {
	a := &aclState{users: make(map[string]*User), ids: make(map[*Command]int)}
	a.maxLog.Store(128)
	var add func(c *Command)
	add = func(c *Command) {
		a.ids[c] = len(a.cmds)
		a.cmds = append(a.cmds, c)
		var m uint32
		for _, w := range strings.Fields(c.Categories) {
			if i := aclCategory(w); i >= 0 {
				m |= 1 << i
			}
		}
		a.cats = append(a.cats, m)
		subs := append([]*Command(nil), c.Subs...)
		sort.Slice(subs, func(i, j int) bool { return subs[i].Name < subs[j].Name })
		for _, sc := range subs {
			add(sc)
		}
	}
	for _, c := range t.Sorted() {
		add(c)
	}
	def := &User{Name: "default"}
	def.store(a.defaultState())
	a.def = def
	a.internal = &User{Name: "default"}
	a.internal.store(a.defaultState())
	a.users["default"] = def
	return a
}

// aclCategory returns the index of a category name, -1 when unknown.
func aclCategory(name string) int {
	for i, c := range aclCategoryNames {
		if strings.EqualFold(c, name) {
			return i
		}
	}
	return -1
}

func (a *aclState) newSelector() *selector {
	return &selector{bits: make([]uint64, (len(a.cmds)+63)/64), allChans: a.pubsubAll.Load()}
}

// newState is a new user's rules: off, no passwords, no permissions.
func (a *aclState) newState() *userState {
	return &userState{sels: []*selector{a.newSelector()}}
}

func (a *aclState) allCommands(s *selector) {
	for i := range s.bits {
		s.bits[i] = ^uint64(0)
	}
	s.future, s.allCmds, s.firstArgs = true, true, nil
}

func (a *aclState) noCommands(s *selector) {
	for i := range s.bits {
		s.bits[i] = 0
	}
	s.future, s.allCmds, s.firstArgs = false, false, nil
}

// changePerm sets cmd's bit and, for a container, its subcommands' bits
// (Redis's ACLChangeSelectorPerm).
func (a *aclState) changePerm(s *selector, cmd *Command, on bool) {
	id := a.ids[cmd]
	s.setBit(id, on)
	delete(s.firstArgs, id)
	for _, sc := range cmd.Subs {
		s.setBit(a.ids[sc], on)
	}
}

// setCategory applies +@cat or -@cat.
func (a *aclState) setCategory(s *selector, cat int, on bool) {
	for id, c := range a.cmds {
		if a.cats[id]&(1<<cat) != 0 {
			a.changePerm(s, c, on)
		}
	}
}

// lookupRule finds the command a rule names: "name" or "container|sub".
func (a *aclState) lookupRule(name string) *Command {
	parts := strings.Split(strings.ToLower(name), "|")
	if len(parts) > 2 {
		return nil
	}
	base := a.top(parts[0])
	if base == nil || len(parts) == 1 {
		return base
	}
	if base.subs == nil {
		return nil
	}
	return base.subs[parts[1]]
}

func (a *aclState) top(name string) *Command {
	for _, c := range a.cmds {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// aclError is a rule's error, with Redis's text.
type aclError string

func (e aclError) Error() string { return string(e) }

const (
	errACLUnknown  aclError = "Unknown command or category name in ACL"
	errACLSyntax   aclError = "Syntax error"
	errACLKeysAll  aclError = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
	errACLChansAll aclError = "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
	errACLNoPass   aclError = "The password you are trying to remove from the user does not exist"
	errACLHash     aclError = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
	errACLFirstArg aclError = "Allowing first-arg of a subcommand is not supported"
	errACLDup      aclError = "Duplicate user found. A user can only be defined once in config files"
)

// applySelector applies one selector rule (a command, key or channel
// rule) to s.
func (a *aclState) applySelector(s *selector, op string) error {
	lop := strings.ToLower(op)
	switch {
	case lop == "allkeys" || op == "~*":
		s.allKeys, s.keys = true, nil
		return nil
	case lop == "resetkeys":
		s.allKeys, s.keys = false, nil
		return nil
	case lop == "allchannels" || op == "&*":
		s.allChans, s.chans = true, nil
		return nil
	case lop == "resetchannels":
		s.allChans, s.chans = false, nil
		return nil
	case lop == "allcommands" || lop == "+@all":
		a.allCommands(s)
		return nil
	case lop == "nocommands" || lop == "-@all":
		a.noCommands(s)
		return nil
	case op == "":
		return errACLSyntax
	case op[0] == '~' || op[0] == '%':
		return a.addKeyPattern(s, op)
	case op[0] == '&':
		if s.allChans {
			return errACLChansAll
		}
		p := op[1:]
		for _, c := range s.chans {
			if c == p {
				return nil
			}
		}
		s.chans = append(s.chans, p)
		return nil
	case len(op) > 1 && (op[0] == '+' || op[0] == '-') && op[1] == '@':
		cat := aclCategory(op[2:])
		if cat < 0 {
			return errACLUnknown
		}
		a.setCategory(s, cat, op[0] == '+')
		return nil
	case op[0] == '+' || op[0] == '-':
		return a.commandRule(s, op[1:], op[0] == '+')
	}
	return errACLSyntax
}

func (a *aclState) addKeyPattern(s *selector, op string) error {
	flags, i := 0, 1
	if op[0] == '%' {
		for ; i < len(op); i++ {
			c := op[i] | 0x20
			if c == 'r' && flags&aclRead == 0 {
				flags |= aclRead
			} else if c == 'w' && flags&aclWrite == 0 {
				flags |= aclWrite
			} else if op[i] == '~' {
				i++
				break
			} else {
				return errACLSyntax
			}
		}
	} else {
		flags = aclRW
	}
	if flags == 0 || i >= len(op) && op[len(op)-1] != '~' || i > len(op) {
		return errACLSyntax
	}
	if op[0] == '%' && op[i-1] != '~' {
		return errACLSyntax
	}
	p := op[i:]
	if s.allKeys {
		return errACLKeysAll
	}
	if p == "*" && flags == aclRW {
		s.allKeys, s.keys = true, nil
		return nil
	}
	for j := range s.keys {
		if s.keys[j].pat == p {
			s.keys[j].flags |= flags
			return nil
		}
	}
	s.keys = append(s.keys, keyPattern{p, flags})
	return nil
}

// commandRule applies +name, -name, +container|sub or +command|firstarg.
func (a *aclState) commandRule(s *selector, name string, on bool) error {
	bar := strings.LastIndexByte(name, '|')
	if bar < 0 {
		cmd := a.lookupRule(name)
		if cmd == nil {
			return errACLUnknown
		}
		a.changePerm(s, cmd, on)
		return nil
	}
	base, sub := name[:bar], name[bar+1:]
	cmd := a.lookupRule(base)
	if cmd == nil {
		return errACLUnknown
	}
	if strings.Contains(cmd.Name, "|") {
		return errACLFirstArg
	}
	if sub == "" {
		return errACLSyntax
	}
	if cmd.subs != nil {
		sc := cmd.subs[strings.ToLower(sub)]
		if sc == nil {
			return errACLUnknown
		}
		a.changePerm(s, sc, on)
		return nil
	}
	if !on {
		return errACLUnknown
	}
	id := a.ids[cmd]
	if s.bit(id) {
		return nil
	}
	if s.firstArgs == nil {
		s.firstArgs = make(map[int][]string)
	}
	lsub := strings.ToLower(sub)
	for _, f := range s.firstArgs[id] {
		if f == lsub {
			return nil
		}
	}
	s.firstArgs[id] = append(s.firstArgs[id], lsub)
	return nil
}

// applyUser applies one rule of ACL SETUSER to st: a user flag, a
// password rule, a selector "(...)" or a rule of the root selector.
func (a *aclState) applyUser(st *userState, op string) error {
	lop := strings.ToLower(op)
	switch {
	case lop == "on":
		st.on = true
	case lop == "off":
		st.on = false
	case lop == "skip-sanitize-payload":
		st.sanitize = 2
	case lop == "sanitize-payload":
		st.sanitize = 1
	case lop == "nopass":
		st.nopass, st.passwords = true, nil
	case lop == "resetpass":
		st.nopass, st.passwords = false, nil
	case lop == "clearselectors":
		st.sels = st.sels[:1]
	case lop == "reset":
		st.nopass, st.passwords, st.on, st.sanitize = false, nil, false, 1
		st.sels = st.sels[:1]
		r := st.sels[0]
		r.allKeys, r.keys, r.allChans, r.chans = false, nil, a.pubsubAll.Load(), nil
		a.noCommands(r)
	case len(op) > 0 && (op[0] == '>' || op[0] == '#'):
		h := op[1:]
		if op[0] == '>' {
			sum := sha256.Sum256([]byte(h))
			h = hex.EncodeToString(sum[:])
		} else if !validHash(h) {
			return errACLHash
		}
		st.nopass = false
		for _, p := range st.passwords {
			if p == h {
				return nil
			}
		}
		st.passwords = append(st.passwords, h)
	case len(op) > 0 && (op[0] == '<' || op[0] == '!'):
		h := op[1:]
		if op[0] == '<' {
			sum := sha256.Sum256([]byte(h))
			h = hex.EncodeToString(sum[:])
		} else if !validHash(h) {
			return errACLHash
		}
		for i, p := range st.passwords {
			if p == h {
				st.passwords = append(st.passwords[:i], st.passwords[i+1:]...)
				return nil
			}
		}
		return errACLNoPass
	case len(op) >= 2 && op[0] == '(' && op[len(op)-1] == ')':
		s := a.newSelector()
		for _, f := range strings.Fields(op[1 : len(op)-1]) {
			if err := a.applySelector(s, f); err != nil {
				return err
			}
		}
		st.sels = append(st.sels, s)
	default:
		return a.applySelector(st.sels[0], op)
	}
	return nil
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// mergeSelectorArgs joins arguments of a selector split by spaces ("(~a"
// "+get)") into one, as Redis's ACLMergeSelectorArguments; it returns the
// argument that opens an unclosed selector.
func mergeSelectorArgs(ops []string) ([]string, string) {
	var out []string
	open := ""
	var cur strings.Builder
	for _, op := range ops {
		if open == "" && len(op) > 0 && op[0] == '(' && op[len(op)-1] != ')' {
			open = op
			cur.Reset()
			cur.WriteString(op)
			continue
		}
		if open != "" {
			cur.WriteByte(' ')
			cur.WriteString(op)
			if len(op) > 0 && op[len(op)-1] == ')' {
				out = append(out, cur.String())
				open = ""
			}
			continue
		}
		out = append(out, op)
	}
	if open != "" {
		return nil, open
	}
	return out, ""
}

// setUserError is a failed rule: the rule and its reason.
type setUserError struct {
	op  string
	err error
}

func (e *setUserError) Error() string {
	return "Error in ACL SETUSER modifier '" + e.op + "': " + e.err.Error()
}

// setUser applies rules to the user name (created when missing) all at
// once: on an error nothing changes. It returns the user.
func (a *aclState) setUser(name string, ops []string) (*User, error) {
	if strings.ContainsAny(name, " \t\n\r\v\f\x00") {
		//lint:ignore ST1005 Redis's exact text, sent to clients as it is
		return nil, errors.New("Usernames can't contain spaces or null characters")
	}
	merged, open := mergeSelectorArgs(ops)
	if open != "" {
		return nil, errors.New("Unmatched parenthesis in acl selector starting at '" + open + "'.")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.users[name]
	var st *userState
	if u == nil {
		st = a.newState()
	} else {
		st = u.state().clone()
	}
	for _, op := range merged {
		if err := a.applyUser(st, op); err != nil {
			return nil, &setUserError{op, err}
		}
	}
	if u == nil {
		u = &User{Name: name}
		a.users[name] = u
	}
	u.store(st)
	return u, nil
}

// user returns the user name, nil when there is none.
func (a *aclState) user(name string) *User {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.users[name]
}

// authenticate returns the user name when pass is one of its passwords
// (or it has nopass) and it is on; nil otherwise.
func (a *aclState) authenticate(name, pass []byte) *User {
	u := a.user(string(name))
	if u == nil {
		return nil
	}
	st := u.state()
	if !st.on {
		return nil
	}
	if st.nopass {
		return u
	}
	sum := sha256.Sum256(pass)
	h := hex.EncodeToString(sum[:])
	for _, p := range st.passwords {
		if p == h {
			return u
		}
	}
	return nil
}

// defaultOpen reports whether new connections are authenticated as the
// default user without AUTH: it is on with nopass.
func (a *aclState) defaultOpen() bool {
	st := a.def.state()
	return st.on && st.nopass
}

// setRequirePass makes requirepass the default user's only password, ""
// nopass, as Redis's ACLUpdateDefaultUserPassword.
func (a *aclState) setRequirePass(pass string) {
	ops := []string{"resetpass", "nopass"}
	if pass != "" {
		ops = []string{"resetpass", ">" + pass}
	}
	a.setUser("default", ops)
}

// check decides whether st may run cmd with args: aclOK, or the most
// relevant reason over its selectors and the offending argument.
func (a *aclState) check(st *userState, cmd *Command, args [][]byte) (int, []byte) {
	reason, obj := 0, []byte(nil)
	best := -1
	for _, s := range st.sels {
		r, o, pos := a.checkSelector(s, cmd, args)
		if r == aclOK {
			return aclOK, nil
		}
		if r > reason || r == reason && pos > best {
			reason, obj, best = r, o, pos
		}
	}
	return reason, obj
}

// checkSelector is one selector's verdict, the offending argument and its
// position.
func (a *aclState) checkSelector(s *selector, cmd *Command, args [][]byte) (int, []byte, int) {
	if !s.allCmds && cmd.Flags&FlagNoAuth == 0 {
		id := a.ids[cmd]
		if !s.bit(id) {
			idx := 1
			if strings.Contains(cmd.Name, "|") {
				idx = 2
			}
			ok := false
			if len(args) > idx {
				for _, f := range s.firstArgs[id] {
					if strings.EqualFold(f, string(args[idx])) {
						ok = true
						break
					}
				}
			}
			if !ok {
				return aclDeniedCmd, nil, 0
			}
		}
	}
	if !s.allKeys && cmd.HasKeys() {
		for i, k := range cmd.KeyArgs(nil, args) {
			f := cmd.KeyFlagsAt(args, i)
			if f&KeyNotKey != 0 {
				continue // a shard channel, checked as a channel below
			}
			if !s.keyAllowed(k, aclKeyNeed(f)) {
				return aclDeniedKey, k, i + 1
			}
		}
	}
	pattern := cmd.Name == "psubscribe"
	if !s.allChans && (cmd.HasChannels() || pattern) && !strings.HasSuffix(cmd.Name, "unsubscribe") {
		chans := cmd.ChannelArgs(args)
		if pattern {
			chans = args[1:]
		}
		for i, c := range chans {
			if !s.chanAllowed(c, pattern) {
				return aclDeniedChannel, c, i + 1
			}
		}
	}
	return aclOK, nil, 0
}

// aclKeyNeed is the permission a key with spec flags f needs, as in
// Redis's ACLSelectorCheckKey: read for access to its data, write for an
// insert, update or delete, both for both, neither for a key whose data is
// not touched (EXISTS, TYPE): any of the selector's patterns then allows
// it.
func aclKeyNeed(f KeyFlag) int {
	need := 0
	if f&KeyAccess != 0 {
		need |= aclRead
	}
	if f&(KeyInsert|KeyDelete|KeyUpdate) != 0 {
		need |= aclWrite
	}
	return need
}

func (s *selector) keyAllowed(k []byte, need int) bool {
	for _, p := range s.keys {
		if p.flags&need == need && keyspace.Match(p.pat, string(k)) {
			return true
		}
	}
	return false
}

func (s *selector) chanAllowed(c []byte, pattern bool) bool {
	for _, p := range s.chans {
		if pattern {
			if p == string(c) {
				return true
			}
		} else if keyspace.Match(p, string(c)) {
			return true
		}
	}
	return false
}

// aclAllows checks cmd, about to run with s.Args, against the rules st of
// the session's user; a refusal is logged in ACL LOG and answered with
// Redis's NOPERM error.
func (s *Session) aclAllows(st *userState, cmd *Command) bool {
	reason, obj := s.srv.acl.check(st, cmd, s.Args)
	if reason == aclOK {
		return true
	}
	ctx := "toplevel"
	if s.multi != nil {
		ctx = "multi"
	}
	s.lastCmd.Store(cmd) // ACL LOG's client-info names the refused command
	s.logDenial(reason, ctx, cmd, obj)
	var msg string
	switch reason {
	case aclDeniedCmd:
		msg = "NOPERM this user has no permissions to run the '" + cmd.Name + "' command"
	case aclDeniedKey:
		msg = "NOPERM this user has no permissions to access one of the keys used as arguments"
	default:
		msg = "NOPERM this user has no permissions to access one of the channels used as arguments"
	}
	if cmd.Name == "exec" && s.multi != nil {
		// Redis's execCommandAbort: the transaction is discarded.
		s.multi = nil
		s.multiLen.Store(0)
		s.unwatchAll()
		msg = "EXECABORT Transaction discarded because of: " + msg
	}
	s.reject(cmd, msg)
	return false
}

// aclAllowsQueued checks a queued command again as EXEC runs it, as Redis
// 7.0 does: a refusal is logged (context multi) and answers that command
// alone, with Redis's text; the transaction's other commands run.
func (s *Session) aclAllowsQueued(st *userState, cmd *Command) bool {
	reason, obj := s.srv.acl.check(st, cmd, s.Args)
	if reason == aclOK {
		return true
	}
	s.logDenial(reason, "multi", cmd, obj)
	why := "no permission to execute the command or subcommand"
	switch reason {
	case aclDeniedKey:
		why = "no permission to touch the specified keys"
	case aclDeniedChannel:
		why = "no permission to access one of the channels used as arguments"
	}
	n := len(s.W.B)
	s.W.Error("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: " + why)
	s.srv.countError(s.W.B[n:])
	return false
}

// aclScriptDenial checks a command a script calls, returning "" or the
// error redis.call raises (Redis's scriptVerifyACL).
func (s *Session) aclScriptDenial(cmd *Command, args [][]byte) string {
	st := s.user.Load().limits.Load()
	if st == nil {
		return ""
	}
	reason, obj := s.srv.acl.check(st, cmd, args)
	if reason == aclOK {
		return ""
	}
	s.logDenial(reason, "lua", cmd, obj)
	switch reason {
	case aclDeniedCmd:
		return "ERR The user executing the script can't run this command or subcommand"
	case aclDeniedKey:
		return "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"
	}
	return "ERR The user executing the script can't publish to the channel mentioned in the command"
}

// logDenial records a refused command in ACL LOG: its name, or the key or
// channel refused.
func (s *Session) logDenial(reason int, ctx string, cmd *Command, obj []byte) {
	object := cmd.Name
	if reason != aclDeniedCmd {
		object = string(obj)
	}
	s.srv.acl.logDenial(s.client(), reason, ctx, object, s.user.Load().Name)
}

// client is the connection's session: a script's runs in a copy of it.
func (s *Session) client() *Session {
	if s.scriptOf != nil {
		return s.scriptOf
	}
	return s
}

// setMaxLog is acllog-max-len: the log keeps the newest n entries.
func (a *aclState) setMaxLog(v string) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return
	}
	a.maxLog.Store(n)
	a.logMu.Lock()
	if int64(len(a.log)) > n {
		a.log = a.log[:n]
	}
	a.logMu.Unlock()
}

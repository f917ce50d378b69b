package server

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/recached/recached/resp"
)

func aclCommands() []*Command {
	const adm = FlagAdmin | FlagNoScript | FlagLoading | FlagStale
	const plain = FlagNoScript | FlagLoading | FlagStale
	const admCats = "admin slow dangerous"
	return []*Command{
		{Name: "acl", Arity: -2, Group: "server", Since: "6.0.0", Summary: "A container for Access List Control commands.", Categories: "slow", Subs: []*Command{
			{Name: "cat", Arity: -2, Flags: plain, Group: "server", Since: "6.0.0", Syntax: "[category]", Summary: "Lists the ACL categories, or the commands inside a category.", Complexity: "O(1) since the categories and commands are a fixed set.", Categories: "slow", Handler: cmdACLCat},
			{Name: "deluser", Arity: -3, Flags: adm, Group: "server", Since: "6.0.0", Syntax: "username [username ...]", Summary: "Deletes ACL users, and terminates their connections.", Complexity: "O(1) amortized time considering the typical user.", Categories: admCats, Handler: cmdACLDelUser},
			{Name: "dryrun", Arity: -4, Flags: adm, Group: "server", Since: "7.0.0", Syntax: "username command [arg [arg ...]]", Summary: "Simulates the execution of a command by a user, without executing the command.", Complexity: "O(1).", Categories: admCats, Handler: cmdACLDryRun},
			{Name: "genpass", Arity: -2, Flags: plain, Group: "server", Since: "6.0.0", Syntax: "[bits]", Summary: "Generates a pseudorandom, secure password that can be used to identify ACL users.", Complexity: "O(1)", Categories: "slow", Handler: cmdACLGenPass},
			{Name: "getuser", Arity: 3, Flags: adm, Group: "server", Since: "6.0.0", Syntax: "username", Summary: "Lists the ACL rules of a user.", Complexity: "O(N). Where N is the number of password, command and pattern rules that the user has.", Categories: admCats, Handler: cmdACLGetUser},
			{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, Group: "server", Since: "6.0.0", Summary: "Returns helpful text about the different subcommands.", Complexity: "O(1)", Categories: "slow", Handler: cmdACLHelp},
			{Name: "list", Arity: 2, Flags: adm, Group: "server", Since: "6.0.0", Summary: "Dumps the effective rules in ACL file format.", Complexity: "O(N). Where N is the number of configured users.", Categories: admCats, Handler: cmdACLList},
			{Name: "load", Arity: 2, Flags: adm, Group: "server", Since: "6.0.0", Summary: "Reloads the rules from the configured ACL file.", Complexity: "O(N). Where N is the number of configured users.", Categories: admCats, Handler: cmdACLLoad},
			{Name: "log", Arity: -2, Flags: adm, Group: "server", Since: "6.0.0", Syntax: "[count|RESET]", Summary: "Lists recent security events generated due to ACL rules.", Complexity: "O(N) with N being the number of entries shown.", Categories: admCats, Handler: cmdACLLog},
			{Name: "save", Arity: 2, Flags: adm, Group: "server", Since: "6.0.0", Summary: "Saves the effective ACL rules in the configured ACL file.", Complexity: "O(N). Where N is the number of configured users.", Categories: admCats, Handler: cmdACLSave},
			{Name: "setuser", Arity: -3, Flags: adm, Group: "server", Since: "6.0.0", Syntax: "username [rule [rule ...]]", Summary: "Creates and modifies an ACL user and its rules.", Complexity: "O(N). Where N is the number of rules provided.", Categories: admCats, Handler: cmdACLSetUser},
			{Name: "users", Arity: 2, Flags: adm, Group: "server", Since: "6.0.0", Summary: "Lists all ACL users.", Complexity: "O(N). Where N is the number of configured users.", Categories: admCats, Handler: cmdACLUsers},
			{Name: "whoami", Arity: 2, Flags: plain, Group: "server", Since: "6.0.0", Summary: "Returns the authenticated username of the current connection.", Complexity: "O(1)", Categories: "slow", Handler: cmdACLWhoAmI},
		}},
	}
}

func cmdACLSetUser(s *Session) {
	ops := make([]string, 0, len(s.Args)-3)
	for _, a := range s.Args[3:] {
		ops = append(ops, string(a))
	}
	var prev *userState
	if u := s.srv.acl.user(string(s.Args[2])); u != nil {
		prev = u.state()
	}
	u, err := s.srv.acl.setUser(string(s.Args[2]), ops)
	if err != nil {
		s.W.Error("ERR " + err.Error())
		return
	}
	if !u.state().on {
		s.srv.killUsers([]*User{u}, s)
	} else if prev != nil {
		s.srv.killPubSubIfNeeded(u, prev, u.state(), s)
	}
	s.W.OK()
}

func cmdACLGetUser(s *Session) {
	u := s.srv.acl.user(string(s.Args[2]))
	if u == nil {
		s.W.Null()
		return
	}
	st := u.state()
	a := s.srv.acl
	s.W.Map(6)
	s.W.BulkString("flags")
	flags := st.flagNames()
	s.W.Array(len(flags))
	for _, f := range flags {
		s.W.BulkString(f)
	}
	s.W.BulkString("passwords")
	s.W.Array(len(st.passwords))
	for _, p := range st.passwords {
		s.W.BulkString(p)
	}
	r := st.sels[0]
	s.W.BulkString("commands")
	s.W.BulkString(a.describeCommands(r))
	s.W.BulkString("keys")
	s.W.BulkString(r.describeKeys())
	s.W.BulkString("channels")
	s.W.BulkString(r.describeChannels())
	s.W.BulkString("selectors")
	s.W.Array(len(st.sels) - 1)
	for _, sel := range st.sels[1:] {
		s.W.Map(3)
		s.W.BulkString("commands")
		s.W.BulkString(a.describeCommands(sel))
		s.W.BulkString("keys")
		s.W.BulkString(sel.describeKeys())
		s.W.BulkString("channels")
		s.W.BulkString(sel.describeChannels())
	}
}

func (st *userState) flagNames() []string {
	var f []string
	if st.on {
		f = append(f, "on")
	} else {
		f = append(f, "off")
	}
	if st.nopass {
		f = append(f, "nopass")
	}
	switch st.sanitize {
	case 2:
		f = append(f, "skip-sanitize-payload")
	case 1:
		f = append(f, "sanitize-payload")
	}
	return f
}

func (s *selector) describeKeys() string {
	if s.allKeys {
		return "~*"
	}
	parts := make([]string, len(s.keys))
	for i, k := range s.keys {
		parts[i] = k.String()
	}
	return strings.Join(parts, " ")
}

func (k keyPattern) String() string {
	switch k.flags {
	case aclRead:
		return "%R~" + k.pat
	case aclWrite:
		return "%W~" + k.pat
	}
	return "~" + k.pat
}

func (s *selector) describeChannels() string {
	if s.allChans {
		return "&*"
	}
	parts := make([]string, len(s.chans))
	for i, c := range s.chans {
		parts[i] = "&" + c
	}
	return strings.Join(parts, " ")
}

// describe is a selector as ACL LIST shows it: keys, channels, commands.
func (a *aclState) describe(s *selector) string {
	var b strings.Builder
	if k := s.describeKeys(); k != "" {
		b.WriteString(k)
		b.WriteByte(' ')
	}
	if s.allChans {
		b.WriteString("&* ")
	} else {
		b.WriteString("resetchannels ")
		for _, c := range s.chans {
			b.WriteString("&" + c + " ")
		}
	}
	b.WriteString(a.describeCommands(s))
	return b.String()
}

// describeLine is a user as ACL LIST and ACL SAVE write it.
func (a *aclState) describeLine(u *User) string {
	st := u.state()
	var b strings.Builder
	b.WriteString("user " + u.Name)
	for _, f := range st.flagNames() {
		b.WriteString(" " + f)
	}
	for _, p := range st.passwords {
		b.WriteString(" #" + p)
	}
	b.WriteString(" " + a.describe(st.sels[0]))
	for _, sel := range st.sels[1:] {
		b.WriteString(" (" + a.describe(sel) + ")")
	}
	return b.String()
}

// describeCommands turns a selector's command bits back into rules as
// Redis's ACLDescribeSelectorCommandRules does: +@all or -@all, then the
// categories that best cover the difference, then single commands.
func (a *aclState) describeCommands(s *selector) string {
	var rules []string
	fake := a.newSelector()
	additive := !s.future
	if additive {
		rules = append(rules, "-@all")
	} else {
		rules = append(rules, "+@all")
		a.allCommands(fake)
	}
	temp := a.newSelector()
	copy(temp.bits, s.bits)
	applied := make([]bool, len(aclCategoryNames))
	for {
		best, mindiff, maxsame := -1, int(^uint(0)>>1), 0
		for j := range aclCategoryNames {
			if applied[j] {
				continue
			}
			on, off := 0, 0
			for id := range a.cmds {
				if a.cats[id]&(1<<j) != 0 {
					if temp.bit(id) {
						on++
					} else {
						off++
					}
				}
			}
			diff, same := on, off
			if additive {
				diff, same = off, on
			}
			if same > diff && (diff < mindiff || diff == mindiff && same > maxsame) {
				best, mindiff, maxsame = j, diff, same
			}
		}
		if best < 0 {
			break
		}
		a.setCategory(fake, best, additive)
		a.setCategory(temp, best, !additive)
		sign := "-@"
		if additive {
			sign = "+@"
		}
		rules = append(rules, sign+aclCategoryNames[best])
		applied[best] = true
	}
	for id, c := range a.cmds {
		user, f := s.bit(id), fake.bit(id)
		if user != f {
			sign := "-"
			if user {
				sign = "+"
			}
			rules = append(rules, sign+c.Name)
			a.changePerm(fake, c, user)
		}
		if !user {
			for _, fa := range s.firstArgs[id] {
				rules = append(rules, "+"+c.Name+"|"+fa)
			}
		}
	}
	return strings.Join(rules, " ")
}

func cmdACLList(s *Session) {
	lines := s.srv.acl.listLines()
	s.W.Array(len(lines))
	for _, l := range lines {
		s.W.BulkString(l)
	}
}

// listLines is every user's ACL LIST line, by name.
func (a *aclState) listLines() []string {
	a.mu.Lock()
	users := make([]*User, 0, len(a.users))
	for _, u := range a.users {
		users = append(users, u)
	}
	a.mu.Unlock()
	sort.Slice(users, func(i, j int) bool { return users[i].Name < users[j].Name })
	lines := make([]string, len(users))
	for i, u := range users {
		lines[i] = a.describeLine(u)
	}
	return lines
}

func cmdACLUsers(s *Session) {
	a := s.srv.acl
	a.mu.Lock()
	names := make([]string, 0, len(a.users))
	for n := range a.users {
		names = append(names, n)
	}
	a.mu.Unlock()
	sort.Strings(names)
	s.W.Array(len(names))
	for _, n := range names {
		s.W.BulkString(n)
	}
}

func cmdACLWhoAmI(s *Session) {
	s.W.BulkString(s.user.Load().Name)
}

func cmdACLDelUser(s *Session) {
	a := s.srv.acl
	n := 0
	for _, arg := range s.Args[2:] {
		if string(arg) == "default" {
			s.W.Error("ERR The 'default' user cannot be removed")
			return
		}
	}
	var gone []*User
	a.mu.Lock()
	for _, arg := range s.Args[2:] {
		if u := a.users[string(arg)]; u != nil {
			delete(a.users, u.Name)
			gone = append(gone, u)
			n++
		}
	}
	a.mu.Unlock()
	s.srv.killUsers(gone, s)
	s.W.Int(int64(n))
}

// killUsers closes the connections authenticated as one of users; the
// caller's closes after its reply.
func (srv *Server) killUsers(users []*User, by *Session) {
	if len(users) == 0 {
		return
	}
	for _, c := range srv.sessions() {
		u := c.user.Load()
		for _, g := range users {
			if u == g && (c.conn != nil || c == by) {
				c.kill(by)
				break
			}
		}
	}
}

// killPubSubIfNeeded closes the connections of u subscribed to a channel,
// pattern or shard channel its new rules st no longer allow, after a
// change from prev, as Redis's ACLKillPubsubClientsIfNeeded: nothing when
// a selector allows every channel or the new channel patterns include
// every old one; otherwise each subscription is matched against the
// patterns of all selectors (a subscribed pattern must be one of them
// literally).
func (srv *Server) killPubSubIfNeeded(u *User, prev, st *userState, by *Session) {
	var upcoming []string
	for _, sel := range st.sels {
		if sel.allChans {
			return
		}
		upcoming = append(upcoming, sel.chans...)
	}
	superset := true
	for _, sel := range prev.sels {
		if sel.allChans {
			superset = false
			break
		}
		for _, c := range sel.chans {
			if indexOf(upcoming, c) < 0 {
				superset = false
			}
		}
	}
	if superset {
		return
	}
	allowed := &selector{chans: upcoming}
	var doomed []*Session
	srv.pubsub.mu.RLock()
	for _, c := range srv.sessions() {
		if c.user.Load() != u || (c.conn == nil && c != by) || !c.ofType("pubsub") {
			continue
		}
		kill := false
		for _, p := range c.ps.patterns {
			kill = kill || !allowed.chanAllowed([]byte(p), true)
		}
		for ch := range c.ps.channels {
			kill = kill || !allowed.chanAllowed([]byte(ch), false)
		}
		for ch := range c.ps.shards {
			kill = kill || !allowed.chanAllowed([]byte(ch), false)
		}
		if kill {
			doomed = append(doomed, c)
		}
	}
	srv.pubsub.mu.RUnlock()
	for _, c := range doomed {
		c.kill(by)
	}
}

func cmdACLCat(s *Session) {
	if len(s.Args) > 3 {
		s.W.Error("ERR unknown subcommand or wrong number of arguments for '" + string(s.Args[1]) + "'. Try ACL HELP.")
		return
	}
	a := s.srv.acl
	if len(s.Args) == 2 {
		s.W.Array(len(aclCategoryNames))
		for _, c := range aclCategoryNames {
			s.W.BulkString(c)
		}
		return
	}
	cat := aclCategory(string(s.Args[2]))
	if cat < 0 {
		s.W.Error(fmt.Sprintf("ERR Unknown category '%s'", s.Args[2]))
		return
	}
	var names []string
	for id, c := range a.cmds {
		if a.cats[id]&(1<<cat) != 0 {
			names = append(names, c.Name)
		}
	}
	s.W.Array(len(names))
	for _, n := range names {
		s.W.BulkString(n)
	}
}

func cmdACLDryRun(s *Session) {
	a := s.srv.acl
	u := a.user(string(s.Args[2]))
	if u == nil {
		s.W.Error(fmt.Sprintf("ERR User '%s' not found", s.Args[2]))
		return
	}
	args := s.Args[3:]
	cmd := s.srv.table.Lookup(args[0])
	if cmd != nil && cmd.subs != nil && len(args) >= 2 {
		if sc := cmd.Sub(args[1]); sc != nil {
			cmd = sc
		}
	}
	if cmd == nil {
		s.W.Error(fmt.Sprintf("ERR Command '%s' not found", args[0]))
		return
	}
	if !cmd.checkArity(len(args)) {
		s.W.Error("ERR wrong number of arguments for '" + cmd.Name + "' command")
		return
	}
	reason, obj := a.check(u.state(), cmd, args)
	if reason == aclOK {
		s.W.OK()
		return
	}
	s.W.BulkString(aclDeniedText(reason, "This user", cmd, obj))
}

// aclDeniedText is Redis's verbose denial (getAclErrorMessage).
func aclDeniedText(reason int, who string, cmd *Command, obj []byte) string {
	switch reason {
	case aclDeniedCmd:
		return who + " has no permissions to run the '" + cmd.Name + "' command"
	case aclDeniedKey:
		return who + " has no permissions to access the '" + string(obj) + "' key"
	}
	return who + " has no permissions to access the '" + string(obj) + "' channel"
}

func cmdACLGenPass(s *Session) {
	bits := int64(256)
	if len(s.Args) > 3 {
		s.W.Error("ERR unknown subcommand or wrong number of arguments for '" + string(s.Args[1]) + "'. Try ACL HELP.")
		return
	}
	if len(s.Args) == 3 {
		n, ok := resp.ParseInt(s.Args[2])
		if !ok {
			s.W.Error(errNotInt)
			return
		}
		if n <= 0 || n > 4096 {
			s.W.Error("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
			return
		}
		bits = n
	}
	chars := int((bits + 3) / 4)
	buf := make([]byte, (chars+1)/2)
	if _, err := rand.Read(buf); err != nil {
		s.W.Error("ERR " + err.Error())
		return
	}
	s.W.BulkString(hex.EncodeToString(buf)[:chars])
}

func cmdACLLog(s *Session) {
	a := s.srv.acl
	count := int64(10)
	if len(s.Args) > 3 {
		s.W.Error("ERR unknown subcommand or wrong number of arguments for '" + string(s.Args[1]) + "'. Try ACL HELP.")
		return
	}
	if len(s.Args) == 3 {
		if resp.EqualFold(s.Args[2], "reset") {
			a.logMu.Lock()
			a.log = nil
			a.logMu.Unlock()
			s.W.OK()
			return
		}
		n, ok := resp.ParseInt(s.Args[2])
		if !ok {
			s.W.Error(errNotInt)
			return
		}
		count = max(n, 0)
	}
	a.logMu.Lock()
	entries := a.log
	if int64(len(entries)) > count {
		entries = entries[:count]
	}
	entries = append([]*aclLogEntry(nil), entries...)
	a.logMu.Unlock()
	now := time.Now()
	s.W.Array(len(entries))
	for _, e := range entries {
		s.W.Map(7)
		s.W.BulkString("count")
		s.W.Int(e.count)
		s.W.BulkString("reason")
		s.W.BulkString(e.reason)
		s.W.BulkString("context")
		s.W.BulkString(e.context)
		s.W.BulkString("object")
		s.W.BulkString(e.object)
		s.W.BulkString("username")
		s.W.BulkString(e.username)
		s.W.BulkString("age-seconds")
		s.W.Double(float64(now.Sub(e.created).Milliseconds()) / 1000)
		s.W.BulkString("client-info")
		s.W.BulkString(e.clientInfo)
	}
}

// logDenial adds an ACL LOG entry, or counts it in a similar one (same
// reason, context, object and user) less than a minute old, moved first.
func (a *aclState) logDenial(s *Session, reason int, context, object, username string) {
	names := [...]string{aclDeniedCmd: "command", aclDeniedKey: "key", aclDeniedAuth: "auth", aclDeniedChannel: "channel"}
	e := &aclLogEntry{count: 1, reason: names[reason], context: context, object: object,
		username: username, clientInfo: strings.TrimSuffix(s.clientLine(time.Now()), "\n"), created: time.Now()}
	a.logMu.Lock()
	defer a.logMu.Unlock()
	for i, old := range a.log {
		if old.reason == e.reason && old.context == e.context && old.object == e.object &&
			old.username == e.username && e.created.Sub(old.created) < time.Minute {
			old.count++
			old.created, old.clientInfo = e.created, e.clientInfo
			copy(a.log[1:i+1], a.log[:i])
			a.log[0] = old
			return
		}
	}
	a.log = append([]*aclLogEntry{e}, a.log...)
	if max := a.maxLog.Load(); int64(len(a.log)) > max {
		a.log = a.log[:max]
	}
}

func cmdACLHelp(s *Session) {
	lines := []string{
		"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CAT [<category>]",
		"    List all commands that belong to <category>, or all command categories",
		"    when no category is specified.",
		"DELUSER <username> [<username> ...]",
		"    Delete a list of users.",
		"DRYRUN <username> <command> [<arg> ...]",
		"    Returns whether the user can execute the given command without executing the command.",
		"GETUSER <username>",
		"    Get the user's details.",
		"GENPASS [<bits>]",
		"    Generate a secure 256-bit user password. The optional `bits` argument can",
		"    be used to specify a different size.",
		"LIST",
		"    Show users details in config file format.",
		"LOAD",
		"    Reload users from the ACL file.",
		"LOG [<count> | RESET]",
		"    Show the ACL log entries.",
		"SAVE",
		"    Save the current config to the ACL file.",
		"SETUSER <username> <attribute> [<attribute> ...]",
		"    Create or modify a user with the specified attributes.",
		"USERS",
		"    List all the registered usernames.",
		"WHOAMI",
		"    Return the current connection username.",
		"HELP",
		"    Prints this help.",
	}
	s.W.Array(len(lines))
	for _, l := range lines {
		s.W.Simple(l)
	}
}

const errNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."

// aclFile is the aclfile parameter's path (relative to dir), "" unset.
func (srv *Server) aclFile() string {
	srv.cfgMu.RLock()
	f := srv.paramValue(paramTable.lookup("aclfile"))
	srv.cfgMu.RUnlock()
	if f == "" || filepath.IsAbs(f) {
		return f
	}
	return filepath.Join(srv.Config().Dir, f)
}

func cmdACLSave(s *Session) {
	path := s.srv.aclFile()
	if path == "" {
		s.W.Error(errNoACLFile)
		return
	}
	if err := s.srv.acl.save(path); err != nil {
		s.W.Error("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
		return
	}
	s.W.OK()
}

// save writes every user's ACL LIST line to path through a temporary file
// renamed over it.
func (a *aclState) save(path string) error {
	data := strings.Join(a.listLines(), "\n") + "\n"
	tmp := path + ".tmp-" + fmt.Sprint(time.Now().UnixNano())
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func cmdACLLoad(s *Session) {
	path := s.srv.aclFile()
	if path == "" {
		s.W.Error(errNoACLFile)
		return
	}
	old, err := s.srv.acl.load(path)
	if err != nil {
		s.W.Error("ERR " + err.Error())
		return
	}
	s.srv.killUsers(old, s)
	s.W.OK()
}

package server

import (
	"fmt"
	"log"
	"os"
	"strings"
)

// parseUserLines reads ACL file lines ("user <name> <rule> ..."; blank
// lines and '#' comments skipped) into a new set of users without touching
// the current ones. Every error is reported, as Redis's ACLLoadFromFile
// does, "file:line: reason" joined by ". ".
func (a *aclState) parseUserLines(file string, lines []string) (map[string]*userState, error) {
	users := make(map[string]*userState)
	var errs []string
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		args, ok := SplitConfigArgs(line)
		if !ok || len(args) == 0 {
			errs = append(errs, fmt.Sprintf("%s:%d: unbalanced quotes in acl line. ", file, i+1))
			continue
		}
		if args[0] != "user" || len(args) < 2 {
			errs = append(errs, fmt.Sprintf("%s:%d should start with user keyword. ", file, i+1))
			continue
		}
		name := args[1]
		if strings.ContainsAny(name, " \t\n\r\v\f\x00") {
			errs = append(errs, fmt.Sprintf("%s:%d: username '%s' contains invalid characters. ", file, i+1, name))
			continue
		}
		if _, dup := users[name]; dup {
			errs = append(errs, fmt.Sprintf("WARNING: Duplicate user '%s' found on line %d. ", name, i+1))
			continue
		}
		ops, open := mergeSelectorArgs(args[2:])
		if open != "" {
			errs = append(errs, fmt.Sprintf("%s:%d: Unmatched parenthesis in acl selector starting at '%s'. ", file, i+1, open))
			continue
		}
		st := a.newState()
		var bad error
		for _, op := range ops {
			if err := a.applyUser(st, op); err != nil {
				bad = fmt.Errorf("%s:%d: %s. ", file, i+1, err)
				break
			}
		}
		if bad != nil {
			errs = append(errs, bad.Error())
			continue
		}
		users[name] = st
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%sWARNING: ACL errors detected, no change to the previously active ACL rules was performed", strings.Join(errs, ""))
	}
	return users, nil
}

// load replaces every user with those of the ACL file path; the default
// user, when the file has none, becomes a fresh default (on, nopass, every
// permission). It returns the users replaced, whose connections the caller
// closes. On an error nothing changes.
func (a *aclState) load(path string) ([]*User, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("Error loading ACLs, opening file '%s': %s", path, errnoText(err))
	}
	users, err := a.parseUserLines(path, strings.Split(string(data), "\n"))
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var old []*User
	for name, u := range a.users {
		if name != "default" {
			old = append(old, u)
		}
	}
	a.users = map[string]*User{"default": a.def}
	for name, st := range users {
		if name == "default" {
			a.def.store(st)
			continue
		}
		u := &User{Name: name}
		u.store(st)
		a.users[name] = u
	}
	if _, ok := users["default"]; !ok {
		a.def.store(a.defaultState())
	}
	return old, nil
}

// defaultState is the default user's rules at start.
func (a *aclState) defaultState() *userState {
	st := a.newState()
	st.on, st.nopass = true, true
	r := st.sels[0]
	a.allCommands(r)
	r.allKeys, r.allChans = true, true
	return st
}

// applyConfigUsers defines the users of the configuration file's "user"
// directives (each the directive's arguments after "user"); a user is
// defined once.
func (a *aclState) applyConfigUsers(lines [][]string) error {
	seen := make(map[string]bool)
	for _, args := range lines {
		if len(args) == 0 {
			continue
		}
		if seen[args[0]] {
			return fmt.Errorf("Error in user declaration '%s': %s", args[0], errACLDup)
		}
		seen[args[0]] = true
		if _, err := a.setUser(args[0], args[1:]); err != nil {
			return fmt.Errorf("Error in user declaration '%s': %s", args[0], err)
		}
	}
	return nil
}

// applyConfigUsers defines the configuration's users at start; an error
// (a bad rule, a user given twice) was reported when the file was read.
func (srv *Server) applyConfigUsers() {
	if err := srv.acl.applyConfigUsers(srv.cfg.Users); err != nil {
		log.Printf("recached: %v", err)
	}
	path := srv.aclFile()
	if path == "" {
		return
	}
	if len(srv.cfg.Users) > 0 {
		log.Printf("recached: Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.")
		return
	}
	if _, err := srv.acl.load(path); err != nil {
		log.Printf("recached: Error loading ACLs: %v", err)
	}
}

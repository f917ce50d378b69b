package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// This file reads Redis's configuration file syntax (redis.conf): one
// directive a line, its arguments split as Redis's sdssplitargs splits them,
// '#' comment lines, "include" of other files (glob patterns, nested), and
// every parameter of the CONFIG table (config_params.go). A bad line stops
// the start with Redis's fatal message, naming the file and line.

// ConfigFileError is a configuration line Redis would refuse, with where it
// was read. Its Error is the message redis-server prints before exiting.
type ConfigFileError struct {
	File   string // the file, or "" for the command line's directives
	Line   int    // 1-based line number in File
	Text   string // the line as read (trimmed)
	Reason string // Redis's reason, e.g. "Bad directive or wrong number of arguments"
}

// Error returns Redis's fatal configuration message; the line-number line
// also names the file, which Redis leaves out.
func (e *ConfigFileError) Error() string {
	where := "of the command line"
	if e.File != "" {
		where = "of " + e.File
	}
	return fmt.Sprintf("\n*** FATAL CONFIG FILE ERROR (Redis %s) ***\nReading the configuration file, at line %d %s\n>>> '%s'\n%s",
		Version, e.Line, where, e.Text, e.Reason)
}

// SplitConfigArgs splits a line into arguments as Redis's sdssplitargs
// does: words separated by spaces; "double quotes" with \n \r \t \b \a,
// \xHH and \<char> escapes; 'single quotes' with \' only. A closing quote
// must be followed by a space or the end of the line. ok is false for an
// unbalanced or badly closed quote.
func SplitConfigArgs(line string) (args []string, ok bool) {
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return args, true
		}
		var cur []byte
		switch line[i] {
		case '"':
			i++
			for {
				if i == len(line) {
					return nil, false
				}
				c := line[i]
				switch {
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					cur = append(cur, unhex(line[i+2])<<4|unhex(line[i+3]))
					i += 4
					continue
				case c == '\\' && i+1 < len(line):
					i++
					switch line[i] {
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'b':
						c = '\b'
					case 'a':
						c = '\a'
					default:
						c = line[i]
					}
				case c == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					i++
					args = append(args, string(cur))
					goto next
				}
				cur = append(cur, c)
				i++
			}
		case '\'':
			i++
			for {
				if i == len(line) {
					return nil, false
				}
				c := line[i]
				switch {
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					c = '\''
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					i++
					args = append(args, string(cur))
					goto next
				}
				cur = append(cur, c)
				i++
			}
		default:
			j := i
			for j < len(line) && !isSpace(line[j]) && line[j] != 0 {
				j++
			}
			if j == i { // a NUL byte ends the line, as it ends a C string
				return args, true
			}
			args = append(args, line[i:j])
			i = j
		}
	next:
	}
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// quoteConfigArg quotes s as Redis's sdscatrepr does (appendRepr, which
// MONITOR uses too), so that SplitConfigArgs reads it back as s.
func quoteConfigArg(s string) string { return string(appendRepr(nil, []byte(s))) }

// maxIncludeDepth bounds nested includes; a cycle is refused before it.
const maxIncludeDepth = 16

// confLoader applies configuration lines to a Config in order, as Redis's
// loadServerConfigFromString does.
type confLoader struct {
	cfg *Config
	// reading is the files being read, outermost first (include cycles).
	reading []string
	// saveSeen: the first save directive replaces the default rules, the
	// next ones add to them.
	saveSeen bool
}

// LoadConfigFile reads the configuration file path (with its includes)
// and then options, the command line's directives (each a name and its
// arguments, as redis-server takes "--port 7000"), into cfg: every
// directive must be a parameter of the CONFIG table with a valid value.
// path "" reads options only. cfg.ConfigFile is set to path's absolute
// form. An error is a *ConfigFileError, or one of a file that cannot be
// read.
func LoadConfigFile(cfg *Config, path string, options [][]string) error {
	l := &confLoader{cfg: cfg}
	if path != "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return fmt.Errorf("can't open config file '%s': %w", path, err)
		}
		cfg.ConfigFile = abs
		if err := l.readFile(abs); err != nil {
			return err
		}
	}
	for i, o := range options {
		if len(o) == 0 {
			continue
		}
		text := o[0]
		for _, a := range o[1:] {
			text += " " + quoteConfigArg(a)
		}
		if err := l.directive("", i+1, text, o); err != nil {
			return err
		}
	}
	return nil
}

// readFile applies every line of one file.
func (l *confLoader) readFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		//lint:ignore ST1005 redis-server's exact message
		return fmt.Errorf("Fatal error, can't open config file '%s': %s", path, errnoText(err))
	}
	l.reading = append(l.reading, path)
	defer func() { l.reading = l.reading[:len(l.reading)-1] }()
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.Trim(line, " \t\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		args, ok := SplitConfigArgs(line)
		if !ok {
			return &ConfigFileError{File: path, Line: i + 1, Text: line, Reason: "Unbalanced quotes in configuration line"}
		}
		if len(args) == 0 {
			continue
		}
		if err := l.directive(path, i+1, line, args); err != nil {
			return err
		}
	}
	return nil
}

// directive applies one line's arguments.
func (l *confLoader) directive(file string, num int, text string, args []string) error {
	fail := func(reason string) error {
		return &ConfigFileError{File: file, Line: num, Text: text, Reason: reason}
	}
	name := strings.ToLower(args[0])
	switch name {
	case "include":
		if len(args) != 2 {
			return fail("Bad directive or wrong number of arguments")
		}
		return l.include(args[1], fail)
	case "user": // ACL users, defined at start (acl_file.go)
		if len(args) < 2 {
			return fail("wrong number of arguments")
		}
		l.cfg.Users = append(l.cfg.Users, args[1:])
		return nil
	case "rename-command", "loadmodule", "sentinel":
		return fail(fmt.Sprintf("recached does not support the %s directive", name))
	}
	p := paramTable.lookup(name)
	if p == nil {
		return fail("Bad directive or wrong number of arguments")
	}
	var v string
	switch {
	case p.flags&paramMultiArg != 0 && len(args) >= 2:
		v = strings.Join(args[1:], " ")
	case len(args) != 2:
		return fail("wrong number of arguments")
	default:
		v = args[1]
	}
	switch p.name {
	case "save":
		if l.saveSeen && v != "" {
			if _, err := ParseSaveRules(v); err != nil {
				return fail(err.Error())
			}
			v = strings.TrimSpace(l.cfg.Save + " " + v)
		}
		l.saveSeen = true
	case "dir":
		st, err := os.Stat(v)
		if err == nil && !st.IsDir() {
			err = errors.New("not a directory")
		}
		if err != nil {
			return fail(errnoText(err))
		}
		abs, err := filepath.Abs(v)
		if err != nil {
			return fail(err.Error())
		}
		v = abs
	case "bind":
		b, err := firstBindAddr(v)
		if err != nil {
			return fail(err.Error())
		}
		v = b
	}
	shown, err := p.parseValue(v, l.value(p))
	if err != nil && p.name == "maxclients" && strings.HasPrefix(err.Error(), "The operating system") {
		// At start Redis lowers its limit to what the system allows
		// rather than refusing; recached's accepts find the limit then.
		shown, err = v, nil
	}
	if err != nil {
		return fail(err.Error())
	}
	l.set(p, shown)
	return nil
}

// value is p's value as loaded so far.
func (l *confLoader) value(p *configParam) string {
	if p.get != nil {
		return p.get(l.cfg)
	}
	if v, ok := l.cfg.Params[p.name]; ok {
		return v
	}
	return p.def
}

// set stores p's value in its Config field or, for a parameter without
// one, in cfg.Params.
func (l *confLoader) set(p *configParam, v string) {
	if p.set != nil {
		p.set(l.cfg, v)
		return
	}
	if l.cfg.Params == nil {
		l.cfg.Params = make(map[string]string)
	}
	l.cfg.Params[p.name] = v
}

// include reads the files a path or glob pattern names: a pattern reads
// every match in name order and none when nothing matches, as Redis does.
// A file that includes itself, directly or not, is refused at the include
// line (Redis would recurse until it crashed); fail makes that error.
func (l *confLoader) include(path string, fail func(string) error) error {
	matches := []string{path}
	if strings.ContainsAny(path, "*?[") {
		var err error
		if matches, err = filepath.Glob(path); err != nil {
			return fail(fmt.Sprintf("Bad include pattern: %v", err))
		}
		sort.Strings(matches)
	}
	for _, m := range matches {
		abs, err := filepath.Abs(m)
		if err != nil {
			return fail(err.Error())
		}
		for _, r := range l.reading {
			if r == abs {
				return fail(fmt.Sprintf("Include loop: %s", strings.Join(append(l.reading[:len(l.reading):len(l.reading)], abs), " includes ")))
			}
		}
		if len(l.reading) >= maxIncludeDepth {
			return fail(fmt.Sprintf("Includes nested deeper than %d files", maxIncludeDepth))
		}
		if err := l.readFile(abs); err != nil {
			return err
		}
	}
	return nil
}

// firstBindAddr reads Redis's bind list. recached listens on one address:
// the first; the others must be optional ('-' prefixed, skipped by Redis
// too when they are unavailable), else the list is refused.
func firstBindAddr(v string) (string, error) {
	f := strings.Fields(v)
	if len(f) == 0 {
		return "", errors.New("wrong number of arguments")
	}
	for _, a := range f[1:] {
		if !strings.HasPrefix(a, "-") {
			return "", fmt.Errorf("recached listens on one address; bind lists %s too", a)
		}
	}
	first := strings.TrimPrefix(f[0], "-")
	if first == "*" {
		first = "0.0.0.0"
	}
	return first, nil
}

// errnoText is the C library's text for a file error ("No such file or
// directory"), as Redis prints strerror(errno).
func errnoText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	s := err.Error()
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// applyStartParams moves the file's parameters kept outside Config's
// fields into the server's parameter map and runs every parameter's apply
// once with the value it starts with, default or not. New calls it.
func (srv *Server) applyStartParams() {
	if len(srv.cfg.Params) > 0 {
		srv.params = make(map[string]string, len(srv.cfg.Params))
		for k, v := range srv.cfg.Params {
			srv.params[k] = v
		}
	}
	srv.cfg.Params = nil
	for _, p := range paramTable.params {
		if p.apply == nil {
			continue
		}
		p.apply(srv, srv.paramValue(p))
	}
}

// IsConfigParam reports whether name (any case) is a CONFIG parameter or
// one of its aliases, a directive a configuration file may hold.
func IsConfigParam(name string) bool { return paramTable.lookup(name) != nil }

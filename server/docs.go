package server

import (
	"strings"
)

// docArg is one argument of a command as COMMAND DOCS describes it.
type docArg struct {
	name     string
	typ      string // key, string, integer, double, pattern, pure-token, oneof, block
	token    string
	optional bool
	multiple bool
	sub      []docArg
}

// parseSyntax turns a command's syntax line, written as in Redis's
// documentation ("key value [NX | XX] [GET] [EX seconds | PX milliseconds]"),
// into COMMAND DOCS arguments: [] optional, () a required group, | one of,
// "..." repeats the element before it, an upper-case word is a token (a
// pure token alone, or the token of the value that follows it).
func parseSyntax(s string) []docArg {
	toks := tokenizeSyntax(s)
	args, _ := parseSeq(toks, 0, "")
	return args
}

func tokenizeSyntax(s string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		for len(f) > 0 {
			switch {
			case f[0] == '[' || f[0] == '(' || f[0] == ']' || f[0] == ')' || f[0] == '|':
				out = append(out, f[:1])
				f = f[1:]
			case strings.HasPrefix(f, "..."):
				out = append(out, "...")
				f = f[3:]
			default:
				i := strings.IndexAny(f, "[]()|")
				j := strings.Index(f, "...")
				if j >= 0 && (i < 0 || j < i) {
					i = j
				}
				if i < 0 {
					i = len(f)
				}
				out = append(out, f[:i])
				f = f[i:]
			}
		}
	}
	return out
}

// parseSeq parses elements until the closing token end; it returns the
// arguments and the position after end.
func parseSeq(toks []string, i int, end string) ([]docArg, int) {
	var alts [][]docArg
	var cur []docArg
	for i < len(toks) {
		t := toks[i]
		switch t {
		case "]", ")":
			if t == end {
				i++
				return finishAlts(alts, cur), i
			}
			i++
		case "|":
			alts = append(alts, cur)
			cur = nil
			i++
		case "[", "(":
			close := "]"
			if t == "(" {
				close = ")"
			}
			sub, j := parseSeq(toks, i+1, close)
			i = j
			var a docArg
			if len(sub) == 1 {
				a = sub[0]
			} else {
				a = docArg{name: blockName(sub), typ: "block", sub: sub}
			}
			if t == "[" {
				a.optional = true
			}
			cur = append(cur, a)
		case "...":
			if len(cur) > 0 {
				cur[len(cur)-1].multiple = true
			}
			i++
		default:
			if isToken(t) {
				if i+1 < len(toks) && !isToken(toks[i+1]) && !isPunct(toks[i+1]) {
					cur = append(cur, docArg{name: toks[i+1], typ: argType(toks[i+1]), token: t})
					i += 2
					continue
				}
				cur = append(cur, docArg{name: strings.ToLower(t), typ: "pure-token", token: t})
			} else {
				cur = append(cur, docArg{name: t, typ: argType(t)})
			}
			i++
		}
	}
	return finishAlts(alts, cur), i
}

func finishAlts(alts [][]docArg, cur []docArg) []docArg {
	if len(alts) == 0 {
		return cur
	}
	alts = append(alts, cur)
	var opts []docArg
	for _, a := range alts {
		if len(a) == 1 {
			opts = append(opts, a[0])
		} else {
			opts = append(opts, docArg{name: blockName(a), typ: "block", sub: a})
		}
	}
	return []docArg{{name: blockName(opts), typ: "oneof", sub: opts}}
}

func blockName(args []docArg) string {
	if len(args) == 0 {
		return "block"
	}
	if args[0].token != "" && args[0].typ != "pure-token" {
		return strings.ToLower(args[0].token)
	}
	return args[0].name
}

func isPunct(t string) bool {
	return t == "[" || t == "]" || t == "(" || t == ")" || t == "|" || t == "..."
}

func isToken(t string) bool {
	if isPunct(t) {
		return false
	}
	hasUpper := false
	for _, c := range t {
		if c >= 'a' && c <= 'z' {
			return false
		}
		if c >= 'A' && c <= 'Z' {
			hasUpper = true
		}
	}
	return hasUpper
}

func argType(name string) string {
	switch {
	case name == "key" || name == "destination" || name == "source" || strings.HasSuffix(name, "key"):
		return "key"
	case name == "pattern":
		return "pattern"
	case name == "score":
		return "double"
	case strings.Contains(name, "seconds") || strings.Contains(name, "milliseconds") ||
		strings.Contains(name, "count") || strings.Contains(name, "offset") ||
		name == "start" || name == "end" || name == "index" || name == "numkeys" ||
		name == "db" || name == "timeout" || name == "cursor" || name == "unix-time-seconds":
		return "integer"
	}
	return "string"
}

// writeDocArgs writes arguments as COMMAND DOCS maps.
func writeDocArgs(s *Session, args []docArg) {
	s.W.Array(len(args))
	for _, a := range args {
		n := 2
		if a.token != "" {
			n++
		}
		if a.optional || a.multiple {
			n++
		}
		if len(a.sub) > 0 {
			n++
		}
		s.W.Map(n)
		s.W.BulkString("name")
		s.W.BulkString(a.name)
		s.W.BulkString("type")
		s.W.BulkString(a.typ)
		if a.token != "" {
			s.W.BulkString("token")
			s.W.BulkString(a.token)
		}
		if a.optional || a.multiple {
			s.W.BulkString("flags")
			var fl []string
			if a.optional {
				fl = append(fl, "optional")
			}
			if a.multiple {
				fl = append(fl, "multiple")
			}
			s.W.Array(len(fl))
			for _, f := range fl {
				s.W.Simple(f)
			}
		}
		if len(a.sub) > 0 {
			s.W.BulkString("arguments")
			writeDocArgs(s, a.sub)
		}
	}
}

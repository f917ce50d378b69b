package keyspace

// Match reports whether s matches the glob pattern as Redis's KEYS does:
// '*' any run, '?' one byte, '[abc]', '[^a]', '[a-z]' classes and '\'
// escapes. It never allocates, and it backtracks only to the last '*', so
// its cost is bounded by len(pattern)*len(s) for any input.
func Match(pattern, s string) bool {
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		if p < len(pattern) {
			if pattern[p] == '*' {
				starP, starI = p, i
				p++
				continue
			}
			if n, ok := matchOne(pattern[p:], s[i]); n > 0 && ok {
				p += n
				i++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starI++
		i = starI
		p = starP + 1
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchOne matches one byte c against the single-byte element at the start
// of pat ('?', a class, an escape or a literal). It returns the element's
// length in the pattern and whether c matches it.
func matchOne(pat string, c byte) (int, bool) {
	switch pat[0] {
	case '?':
		return 1, true
	case '\\':
		if len(pat) >= 2 {
			return 2, pat[1] == c
		}
		return 1, c == '\\'
	case '[':
		i := 1
		not := i < len(pat) && pat[i] == '^'
		if not {
			i++
		}
		matched := false
		for i < len(pat) && pat[i] != ']' {
			switch {
			case pat[i] == '\\' && i+1 < len(pat):
				i++
				if pat[i] == c {
					matched = true
				}
			case i+2 < len(pat) && pat[i+1] == '-':
				lo, hi := pat[i], pat[i+2]
				if lo > hi {
					lo, hi = hi, lo
				}
				if c >= lo && c <= hi {
					matched = true
				}
				i += 2
			case pat[i] == c:
				matched = true
			}
			i++
		}
		if i < len(pat) {
			i++ // the closing ']'
		}
		return i, matched != not
	default:
		return 1, pat[0] == c
	}
}

package server

import "strings"

// QuoteConfigLine joins args into a line that SplitConfigArgs splits back
// into them, each argument quoted as CONFIG REWRITE quotes values: for the
// external tests' fuzz target.
func QuoteConfigLine(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = quoteConfigArg(a)
	}
	return strings.Join(q, " ")
}

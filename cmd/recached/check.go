package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/recached/recached/snapshot"
)

// runCheck is "recached check FILE [--fix]": it verifies a snapshot or an
// append-only log and, with --fix, cuts a damaged log back to its last
// good record. It returns the exit code: 0 for a sound (or fixed) file, 1
// for a damaged one, 2 for bad usage.
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("recached check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fix := fs.Bool("fix", false, "truncate a damaged append-only log to its last good record")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: recached check FILE [--fix]\n\nVerifies a snapshot (dump.rcd) or an append-only log (appendonly.N.aof).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	// The file may come before or after --fix.
	var files []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return 0
			}
			return 2
		}
		args = fs.Args()
		if len(args) > 0 {
			files = append(files, args[0])
			args = args[1:]
		}
	}
	if len(files) != 1 {
		fs.Usage()
		return 2
	}
	if _, err := snapshot.Check(files[0], *fix, stdout); err != nil {
		if !snapshot.IsCorrupt(err) {
			fmt.Fprintf(stderr, "recached check: %v\n", err)
		}
		return 1
	}
	return 0
}

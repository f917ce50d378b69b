package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	recsync "github.com/recached/recached/sync"
)

// runToken is "recached token --secret S --patterns 'a,b' [--ttl 1h]": it
// prints a scope token (SPEC section 5) granting the patterns, expiring
// after ttl when one is given. The secret defaults to
// RECACHED_TOKEN_SECRET. It returns the process exit code.
func runToken(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("recached token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	secret := fs.String("secret", getenv("RECACHED_TOKEN_SECRET"), "HMAC secret, as the server's --token-secret (env RECACHED_TOKEN_SECRET)")
	patterns := fs.String("patterns", "", "comma-separated key patterns the token grants, e.g. 'user:42:*,room:1'")
	ttl := fs.Duration("ttl", 0, "lifetime, e.g. 1h (0: the token never expires)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: recached token --secret S --patterns 'p1,p2' [--ttl 1h]\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(msg string) int {
		fmt.Fprintf(stderr, "recached token: %s\n", msg)
		fs.Usage()
		return 2
	}
	switch {
	case fs.NArg() > 0:
		return fail(fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	case *secret == "":
		return fail("--secret is required")
	case *patterns == "":
		return fail("--patterns is required")
	case *ttl < 0:
		return fail("--ttl must not be negative")
	}
	var expiry int64
	if *ttl > 0 {
		expiry = time.Now().Add(*ttl).Unix()
	}
	tok, err := recsync.SignToken([]byte(*secret), strings.Split(*patterns, ","), expiry)
	if err != nil {
		return fail(err.Error())
	}
	fmt.Fprintln(stdout, tok)
	return 0
}

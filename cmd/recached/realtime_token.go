package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/recached/recached/sync/apikey"
)

// runRealtimeToken is "recached realtime-token --api-keys FILE --key k1
// --ttl 1h [--capability JSON] [--client-id ID]": it prints a Blackevin
// access token (SPEC section 9), a JWT signed HS256 with the key's secret,
// kid the key id, expiring after ttl, with x-capability and x-client-id
// when given. The capability the server grants is the token's intersected
// with the key's. It returns the process exit code.
func runRealtimeToken(args []string, now time.Time, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("recached realtime-token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("api-keys", "", "the API keys file, as the server's --api-keys")
	id := fs.String("key", "", "id of the key that signs the token")
	ttl := fs.Duration("ttl", time.Hour, "lifetime, e.g. 1h (required to be positive: a token always expires)")
	capText := fs.String("capability", "", `capability JSON, e.g. '{"chat:*":["subscribe","publish"]}' (default: the key's)`)
	clientID := fs.String("client-id", "", "client id the token binds presence to (default: none)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: recached realtime-token --api-keys FILE --key k1 --ttl 1h [--capability JSON] [--client-id ID]\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(msg string) int {
		fmt.Fprintf(stderr, "recached realtime-token: %s\n", msg)
		return 2
	}
	switch {
	case fs.NArg() > 0:
		return fail(fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	case *file == "":
		return fail("--api-keys is required")
	case *id == "":
		return fail("--key is required")
	case *ttl <= 0:
		return fail("--ttl must be positive")
	}
	store, err := apikey.Load(*file)
	if err != nil {
		return fail(err.Error())
	}
	k := store.Key(*id)
	if k == nil {
		return fail(fmt.Sprintf("%s has no key %q", *file, *id))
	}
	var c apikey.Capability
	if *capText != "" {
		if c, err = apikey.ParseCapability([]byte(*capText)); err != nil {
			return fail("--capability: " + err.Error())
		}
	}
	tok, err := apikey.Mint(k, *ttl, c, *clientID, now)
	if err != nil {
		return fail(err.Error())
	}
	fmt.Fprintln(stdout, tok)
	return 0
}

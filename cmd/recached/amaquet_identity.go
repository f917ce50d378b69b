package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/amaquet"
)

// runAmaquetIdentity is "recached amaquet-identity --dir D": it prints the
// base64 Ed25519 public key of the server's Amaquet identity in D, which
// HELLO signs with and clients pin. Like the server's first start, it
// creates the key when D holds none. It returns the process exit code.
func runAmaquetIdentity(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("recached amaquet-identity", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", server.DefaultConfig().Dir, "the server's --dir, where "+amaquet.IdentityFile+" is kept")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: recached amaquet-identity --dir D\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "recached amaquet-identity: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	k, err := amaquet.LoadIdentity(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "recached amaquet-identity: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, amaquet.PublicKeyText(k))
	return 0
}

// amaquetOptions returns the Amaquet listener's options from cfg, with the
// identity key of cfg.Dir (created at the first start).
func amaquetOptions(cfg server.Config) (amaquet.Options, error) {
	k, err := amaquet.LoadIdentity(cfg.Dir)
	if err != nil {
		return amaquet.Options{}, err
	}
	if cfg.AmaquetMaxPayload <= 0 || cfg.AmaquetMaxPayload > amaquet.HardMaxPayload {
		return amaquet.Options{}, fmt.Errorf("--amaquet-max-payload must be within 1 and %d", amaquet.HardMaxPayload)
	}
	if cfg.AmaquetMaxInflight <= 0 || cfg.AmaquetPayloadBudget <= 0 || cfg.AmaquetReadTimeout <= 0 || cfg.AmaquetIdleTimeout < 0 {
		return amaquet.Options{}, errors.New("--amaquet-max-inflight, --amaquet-payload-budget and --amaquet-read-timeout must be positive, --amaquet-idle-timeout not negative")
	}
	return amaquet.Options{
		Addr:          net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.AmaquetPort)),
		Identity:      k,
		MaxPayload:    cfg.AmaquetMaxPayload,
		MaxInflight:   cfg.AmaquetMaxInflight,
		PayloadBudget: cfg.AmaquetPayloadBudget,
		ReadTimeout:   cfg.AmaquetReadTimeout,
		IdleTimeout:   cfg.AmaquetIdleTimeout,
	}, nil
}

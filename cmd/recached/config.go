package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/recached/recached/server"
)

// loadConfigArgs reads the configuration file the command line names, as
// redis-server takes it: the first argument when it is not a flag
// ("recached /etc/redis/redis.conf --port 7000"), or --config FILE. It
// also takes Redis-style directives the flag set does not know,
// "--maxmemory 2gb" or "--save 900 1 300 10" (a name and the arguments up
// to the next "--"), and applies them after the file, as redis-server
// does. The file's values become the flags' defaults, so the flags given
// on the command line override them. It returns the arguments left for
// fs.Parse; cfg must be the variable fs's flags are bound to.
func loadConfigArgs(fs *flag.FlagSet, cfg *server.Config, args []string, stderr io.Writer) ([]string, error) {
	var path string
	if len(args) > 0 && args[0] != "" && !strings.HasPrefix(args[0], "-") {
		path, args = args[0], args[1:]
	}
	var rest []string
	var options [][]string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		if !strings.HasPrefix(a, "--") || len(a) == 2 {
			rest = append(rest, a)
			continue
		}
		body := a[2:]
		if strings.ContainsAny(body, " \t") {
			// "--maxmemory 700mb": a directive and its value in one
			// argument, split as a configuration line.
			words, ok := server.SplitConfigArgs(body)
			if !ok || len(words) == 0 {
				words = []string{body} // refused by the loader with the line
			}
			options = append(options, words)
			continue
		}
		name, value, hasValue := strings.Cut(body, "=")
		if name == "config" {
			if !hasValue {
				if i+1 == len(args) {
					fmt.Fprintf(stderr, "recached: --config needs a file\n")
					return nil, fmt.Errorf("--config needs a file")
				}
				i++
				value = args[i]
			}
			path = value
			continue
		}
		// save is read as redis-server reads it, so that "--save 900 1",
		// "--save" and "--save --port 7000" work; other flags are flags.
		if name != "save" && (fs.Lookup(name) != nil || !server.IsConfigParam(name)) {
			rest = append(rest, a) // a flag, or an error for fs.Parse
			continue
		}
		o := []string{name}
		if hasValue {
			o = append(o, value)
		} else {
			// As redis-server: the arguments run to the next "--" one,
			// but the first may start with "--" itself (except after
			// --save, which is then empty).
			for i+1 < len(args) {
				next := args[i+1]
				if strings.HasPrefix(next, "--") && (len(o) > 1 || name == "save") {
					break
				}
				i++
				o = append(o, next)
			}
			if name == "save" && len(o) == 1 {
				o = append(o, "")
			}
		}
		options = append(options, o)
	}
	if path == "" && len(options) == 0 {
		return rest, nil
	}
	if err := server.LoadConfigFile(cfg, path, options); err != nil {
		fmt.Fprintln(stderr, err)
		return nil, err
	}
	warnIgnored(cfg, stderr)
	// The flags are bound to cfg's fields, which now hold the file's
	// values, except --appendonly (a yes/no text): it learns the file's
	// value through its Set, so that it stays unless given.
	if f := fs.Lookup("appendonly"); f != nil {
		v := "no"
		if cfg.AppendOnly {
			v = "yes"
		}
		if err := f.Value.Set(v); err != nil {
			return nil, err
		}
	}
	return rest, nil
}

// warnIgnored tells the user of the directives of a Redis setup that
// recached accepts and does not act on, where acting matters to them.
func warnIgnored(cfg *server.Config, stderr io.Writer) {
	p := cfg.Params
	if p["daemonize"] == "yes" {
		fmt.Fprintln(stderr, "recached: daemonize yes is ignored: recached runs in the foreground (run it under a service manager)")
	}
	if p["logfile"] != "" {
		fmt.Fprintf(stderr, "recached: logfile %s is ignored: recached logs to stderr\n", p["logfile"])
	}
	if p["pidfile"] != "" {
		fmt.Fprintf(stderr, "recached: pidfile %s is ignored: recached writes no pid file\n", p["pidfile"])
	}
}

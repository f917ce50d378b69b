package server

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// Checks of CONFIG values that Redis makes when it applies them, with its
// error texts; found by the differential test against redis-server
// (config_diff_test.go).

// withCheck returns p with check as its value check.
func withCheck(p *configParam, check func(v string) (string, error)) *configParam {
	p.check = check
	return p
}

// checkActiveDefrag refuses to turn on active defragmentation, which
// recached does not have, as Redis refuses it when its allocator cannot.
func checkActiveDefrag(v string) (string, error) {
	if v == "yes" {
		return "", configError("Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution")
	}
	return v, nil
}

// checkNoTLS refuses to turn on TLS for the cluster bus or replication:
// recached has no TLS, as Redis without TLS configured cannot.
func checkNoTLS(v string) (string, error) {
	if v == "yes" {
		return "", configError("Unable to update TLS configuration. Check server logs.")
	}
	return v, nil
}

// procTitleVars are the variables proc-title-template may use.
var procTitleVars = map[string]bool{
	"{title}": true, "{listen-addr}": true, "{server-mode}": true, "{port}": true,
	"{tls-port}": true, "{unixsocket}": true, "{config-file}": true,
}

// checkProcTitle validates proc-title-template as Redis does: known
// variables in braces, and a title that is not empty.
func checkProcTitle(v string) (string, error) {
	bad := configError("template format is invalid or contains unknown variables")
	rest, out := v, 0
	for rest != "" {
		i := strings.IndexAny(rest, "{}")
		if i < 0 {
			out += len(rest)
			break
		}
		if rest[i] == '}' {
			return "", bad
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 || !procTitleVars[rest[i:i+j+1]] {
			return "", bad
		}
		out += i + 1 // a variable may expand to nothing; count it as text
		rest = rest[i+j+1:]
	}
	if out == 0 || strings.TrimSpace(v) == "" {
		return "", bad
	}
	return v, nil
}

// clampBacklog raises repl-backlog-size to Redis's 16 kB minimum.
func clampBacklog(v string) (string, error) {
	n, _ := strconv.ParseInt(v, 10, 64)
	return strconv.FormatInt(max(n, 16384), 10), nil
}

// reservedFDs are the descriptors Redis keeps for itself beyond its
// clients (CONFIG_MIN_RESERVED_FDS).
const reservedFDs = 32

// checkMaxClients refuses more clients than the process may open files
// for, first trying to raise its limit, as Redis does.
func checkMaxClients(v string) (string, error) {
	n, _ := strconv.ParseUint(v, 10, 64)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return v, nil // the limit is unknown: nothing to check against
	}
	need := n + reservedFDs
	if need <= lim.Cur {
		return v, nil
	}
	if need <= lim.Max {
		raised := lim
		raised.Cur = need
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			return v, nil
		}
	}
	best := max(lim.Cur, min(lim.Max, need))
	return "", configError(fmt.Sprintf("The operating system is not able to handle the specified number of clients, try with %d", best-reservedFDs))
}

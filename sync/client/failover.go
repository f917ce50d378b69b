package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/recached/recached/resp"
)

// A deployment with replication has one primary and read-only replicas;
// Redis Sentinel (or an operator) may promote a replica at any time. A
// client given several addresses (Options.URLs) or Sentinels writes only
// to the primary: it asks ROLE on every connection before the session is
// established, and moves on when the answer is not "master" or when a
// write is answered -READONLY. Its outbox is replayed to the new primary
// with the same wire ids: the server replicates each DEDUP mark with the
// write it covers, so a write the old primary had replicated is answered
// +DUP and the others run, exactly once (CLIENTS.md section 8).

// ErrNotPrimary is why a connection to a replica is closed when the client
// needs the primary.
var ErrNotPrimary = errors.New("client: the server is a replica, not the primary")

// errReadOnly is why a connection whose server refused a write with
// -READONLY is closed: it was demoted, or was never the primary.
var errReadOnly = errors.New("client: the server refused a write with -READONLY (a replica); looking for the primary")

// isReadOnly reports whether v is Redis's refusal of a write on a
// read-only replica.
func isReadOnly(v resp.Value) bool {
	return v.Kind == '-' && len(v.Str) >= 8 && string(v.Str[:8]) == "READONLY"
}

// parseTarget returns the scheme of raw and the address the client dials
// for it: host:port for tcp, the URL for ws and wss.
func parseTarget(raw string) (scheme, target string, err error) {
	u, err := parseServerURL(raw)
	if err != nil {
		return "", "", err
	}
	if u.Scheme == "tcp" {
		return u.Scheme, u.Host, nil
	}
	return u.Scheme, u.String(), nil
}

// roleOf returns the role in a ROLE reply ("master", "slave", "sentinel")
// and, for a replica, its primary's address.
func roleOf(v resp.Value) (role, primary string) {
	if v.Kind != '*' || len(v.Elems) == 0 {
		return "", ""
	}
	role = string(v.Elems[0].Str)
	if role == "slave" && len(v.Elems) >= 3 {
		port := v.Elems[2].Int
		if v.Elems[2].Kind != ':' {
			port, _ = strconv.ParseInt(string(v.Elems[2].Str), 10, 64)
		}
		primary = net.JoinHostPort(string(v.Elems[1].Str), strconv.FormatInt(port, 10))
	}
	return role, primary
}

// checksRole reports whether the client asks ROLE on every connection: it
// knows more than one server. The caller owns the run goroutine or holds
// mu.
func (c *Client) checksRole() bool {
	return len(c.targets) > 1 || len(c.opts.Sentinels) > 0
}

// nextTarget returns the address the next connection attempt dials: the
// primary Sentinel names when Sentinels are configured and one answers;
// else the primary a replica named in its ROLE reply (tcp only: a RESP
// address is not a bridge URL); else the next address of the list, in
// turn. It runs on the connection goroutine.
func (c *Client) nextTarget() string {
	if len(c.opts.Sentinels) > 0 {
		if addr, err := c.askSentinels(); err == nil {
			return addr
		} else {
			c.report(err)
		}
	}
	c.mu.Lock()
	hint := c.hint
	c.hint = ""
	c.mu.Unlock()
	if hint != "" {
		return hint
	}
	t := c.targets[c.turn%len(c.targets)]
	c.turn++
	return t
}

// askSentinels asks each Sentinel in turn for the primary's address
// (SENTINEL GET-MASTER-ADDR-BY-NAME) and returns the first answer.
func (c *Client) askSentinels() (string, error) {
	var errs []error
	for _, s := range c.opts.Sentinels {
		addr, err := c.askSentinel(s)
		if err == nil {
			return addr, nil
		}
		errs = append(errs, fmt.Errorf("sentinel %s: %w", s, err))
	}
	return "", fmt.Errorf("client: no Sentinel named the primary %q: %w", c.opts.MasterName, errors.Join(errs...))
}

func (c *Client) askSentinel(addr string) (string, error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.DialTimeout)
	defer cancel()
	netDial := c.opts.NetDial
	if netDial == nil {
		netDial = (&net.Dialer{}).DialContext
	}
	nc, err := netDial(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(c.opts.DialTimeout))
	cmd := [][]byte{[]byte("SENTINEL"), []byte("GET-MASTER-ADDR-BY-NAME"), []byte(c.opts.MasterName)}
	if c.opts.SentinelPassword != "" {
		if _, err := nc.Write(resp.AppendCommand(nil, []byte("AUTH"), []byte(c.opts.SentinelPassword))); err != nil {
			return "", err
		}
	}
	if _, err := nc.Write(resp.AppendCommand(nil, cmd...)); err != nil {
		return "", err
	}
	r := bufio.NewReader(nc)
	if c.opts.SentinelPassword != "" {
		v, err := resp.ReadValue(r)
		if err != nil {
			return "", err
		}
		if v.IsError() {
			return "", v.Err()
		}
	}
	v, err := resp.ReadValue(r)
	switch {
	case err != nil:
		return "", err
	case v.IsError():
		return "", v.Err()
	case v.Kind != '*' || v.Null || len(v.Elems) != 2:
		return "", fmt.Errorf("no primary named %q", c.opts.MasterName)
	}
	return net.JoinHostPort(string(v.Elems[0].Str), string(v.Elems[1].Str)), nil
}

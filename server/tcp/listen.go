package tcp

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// The listening sockets are the listener's own, not gnet's: gnet's engine
// cannot close one listener and keep its connections, which CONFIG SET
// port and bind need (Redis moves its listeners and keeps its clients).
// Each socket has an accept goroutine that hands the connections it
// accepts to the engine's event loops (Engine.Register), where they are
// served exactly as connections gnet accepted itself.

// listenAddr is one address to listen on.
type listenAddr struct {
	network, addr string
	// optional is Redis's "-" prefix: skipped when the system has no
	// such address.
	optional bool
}

// socket is a listening socket and the address it was opened for.
type socket struct {
	at listenAddr
	ln net.Listener
}

// listenAddrs turns Redis's bind list and a port into the addresses to
// listen on: "*" is every IPv4 address, "::*" every IPv6 one. An empty
// list, or port 0, listens nowhere, as in Redis.
func listenAddrs(bind []string, port int) []listenAddr {
	if port == 0 {
		return nil
	}
	var out []listenAddr
	for _, b := range bind {
		a := listenAddr{network: "tcp4"}
		if strings.HasPrefix(b, "-") {
			a.optional, b = true, b[1:]
		}
		switch b {
		case "*":
			b = "0.0.0.0"
		case "::*":
			b = "::"
		}
		if strings.Contains(b, ":") {
			a.network = "tcp6"
		}
		a.addr = net.JoinHostPort(b, strconv.Itoa(port))
		out = append(out, a)
	}
	return out
}

// listenAll returns a socket for every address, or none: a socket of old
// opened for the same address is kept; when one that is not optional
// cannot be opened, the ones opened are closed and the error returned.
func listenAll(addrs []listenAddr, old []socket) (socks []socket, err error) {
	// Keep-alive is set per connection from tcp-keepalive (OnOpen).
	lc := net.ListenConfig{KeepAlive: -1}
	defer func() {
		if err == nil {
			return
		}
		for _, s := range socks {
			if !kept(s, old) {
				_ = s.ln.Close()
			}
		}
		socks = nil
	}()
	for _, a := range addrs {
		if i := slices.IndexFunc(old, func(s socket) bool { return s.at.network == a.network && s.at.addr == a.addr }); i >= 0 {
			socks = append(socks, old[i])
			continue
		}
		ln, err := lc.Listen(context.Background(), a.network, a.addr)
		if err != nil {
			if a.optional && (errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT)) {
				continue
			}
			return socks, fmt.Errorf("listen on %s: %w", a.addr, err)
		}
		socks = append(socks, socket{at: a, ln: ln})
	}
	return socks, nil
}

// kept reports whether s is one of socks.
func kept(s socket, socks []socket) bool {
	return slices.ContainsFunc(socks, func(o socket) bool { return o.ln == s.ln })
}

// splitAddr reads the listener's address: host may be a space-separated
// bind list.
func splitAddr(addr string) ([]string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return nil, 0, fmt.Errorf("bad port in %q", addr)
	}
	bind := strings.Fields(host)
	if host == "" {
		bind = []string{"*"}
	}
	return bind, port, nil
}

// startAccepting starts an accept goroutine for every socket of socks
// not in old; l.mu held.
func (l *Listener) startAccepting(socks, old []socket) {
	for _, s := range socks {
		if !kept(s, old) {
			l.accepting.Add(1)
			go l.accept(s.ln)
		}
	}
}

// accept hands every connection ln accepts to the engine until ln is
// closed. A failing accept (out of file descriptors) is retried after a
// pause, as Redis logs it and goes on.
func (l *Listener) accept(ln net.Listener) {
	defer l.accepting.Done()
	pause := 5 * time.Millisecond
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			log.Printf("recached: accepting a RESP connection: %v", err)
			time.Sleep(pause)
			pause = min(2*pause, time.Second)
			continue
		}
		pause = 5 * time.Millisecond
		// gnet's round robin among event loops is not safe for
		// concurrent use: one registration at a time.
		l.regMu.Lock()
		_, err = l.eng.Register(gnet.NewNetConnContext(context.Background(), c))
		l.regMu.Unlock()
		if err != nil {
			_ = c.Close() // the engine is stopping
		}
	}
}

// Relisten moves the listening sockets to the addresses of bind and port
// (CONFIG SET bind, port). The new sockets are opened first, keeping the
// ones already open on an address that stays: when one cannot be opened,
// the old ones stay and the error is returned. Connections accepted
// before stay open.
func (l *Listener) Relisten(bind []string, port int) error {
	<-l.ready
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return errors.New("the listener is stopped")
	}
	addrs := listenAddrs(bind, port)
	socks, err := listenAll(addrs, l.socks)
	if errors.Is(err, syscall.EADDRINUSE) && len(l.socks) > 0 {
		// One of the old sockets may hold the address (0.0.0.0 takes
		// 127.0.0.1's port): as Redis does, close them and try again,
		// opening them again if that fails too.
		var was []listenAddr
		for _, s := range l.socks {
			was = append(was, s.at)
			_ = s.ln.Close()
		}
		l.socks = nil
		if socks, err = listenAll(addrs, nil); err != nil {
			back, berr := listenAll(was, nil)
			if berr != nil {
				log.Printf("recached: opening the old RESP sockets again: %v", berr)
			}
			l.startAccepting(back, nil)
			l.socks = back
		}
	}
	if err != nil {
		log.Printf("recached: %v", err)
		return err
	}
	for _, s := range l.socks {
		if !kept(s, socks) {
			_ = s.ln.Close()
		}
	}
	l.startAccepting(socks, l.socks)
	l.socks = socks
	log.Printf("recached: RESP listening on %q port %d", strings.Join(bind, " "), port)
	return nil
}

// closeListeners stops accepting and waits for the accept goroutines.
func (l *Listener) closeListeners() {
	l.mu.Lock()
	l.stopped = true
	for _, s := range l.socks {
		_ = s.ln.Close()
	}
	l.socks = nil
	l.mu.Unlock()
	l.accepting.Wait()
}

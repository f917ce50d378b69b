package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"

	"github.com/recached/recached/resp"
)

// dataTypeRows are the -datatypes rows at pipeline 16: XADD with ids the
// server chooses, a consumer group reading and acknowledging, GEOADD and
// GEOSEARCH. GEO coordinates are __rand_int__e-6 (redis-benchmark pads
// __rand_int__ to twelve digits), so the points fill a one-degree square
// near 0,0 and a 1 km search finds a few hundred of them once GEOADD has
// run.
func dataTypeRows(scale int) []row {
	rand := []string{"-r", "1000000"}
	return []row{
		{test: "xadd", clients: 50, pipeline: 16, threads: 1, n: 1000000 / scale,
			extra: []string{"XADD", "bench:stream", "*", "f", "v"}},
		{test: "xreadgroup+xack", clients: 50, pipeline: 16, threads: 1, n: 400000 / scale,
			drive: readAck},
		{test: "geoadd", clients: 50, pipeline: 16, threads: 1, n: 1000000 / scale,
			extra: append(rand, "GEOADD", "bench:geo", "__rand_int__e-6", "__rand_int__e-6", "m:__rand_int__")},
		{test: "geosearch 1km count 10", clients: 50, pipeline: 16, threads: 1, n: 50000 / scale,
			extra: append(rand, "GEOSEARCH", "bench:geo", "FROMLONLAT", "__rand_int__e-6", "__rand_int__e-6", "BYRADIUS", "1", "km", "ASC", "COUNT", "10")},
	}
}

// readAck is the XREADGROUP+XACK row: it fills a stream with n/2 entries
// (not measured: it returns the function that is), then c clients each
// pipeline p XREADGROUP … COUNT 1 … > and then the p XACKs of the ids they
// got, until the group has delivered every entry. It returns the requests
// sent, n of them: half reads, half acknowledgements.
func readAck(addr string, n, c, p int) (func() (int, error), error) {
	const key, group = "bench:rg", "g"
	entries := n / 2
	cn, err := dialRESP(addr)
	if err != nil {
		return nil, err
	}
	defer cn.c.Close()
	if _, err := cn.do("DEL", key); err != nil {
		return nil, err
	}
	if err := cn.pipelineN(entries, func(i int) []string { return []string{"XADD", key, "*", "f", strconv.Itoa(i)} }); err != nil {
		return nil, fmt.Errorf("fill %s: %w", key, err)
	}
	if v, err := cn.do("XGROUP", "CREATE", key, group, "0"); err != nil || v.str != "OK" {
		return nil, fmt.Errorf("XGROUP CREATE: %v %v", v.str, err)
	}
	conns := make([]*respConn, c)
	for i := range conns {
		if conns[i], err = dialRESP(addr); err != nil {
			return nil, err
		}
	}
	return func() (int, error) {
		var wg sync.WaitGroup
		sent := make([]int, c)
		errs := make([]error, c)
		for i, cn := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer cn.c.Close()
				sent[i], errs[i] = cn.readAckLoop(key, group, "c"+strconv.Itoa(i), p)
			}()
		}
		wg.Wait()
		total := 0
		for i := range sent {
			total += sent[i]
		}
		return total, errors.Join(errs...)
	}, nil
}

// readAckLoop is one client of readAck.
func (cn *respConn) readAckLoop(key, group, consumer string, p int) (int, error) {
	read := appendCommand(nil, "XREADGROUP", "GROUP", group, consumer, "COUNT", "1", "STREAMS", key, ">")
	sent := 0
	var batch []byte
	ids := make([]string, 0, p)
	for {
		batch = batch[:0]
		for i := 0; i < p; i++ {
			batch = append(batch, read...)
		}
		if _, err := cn.c.Write(batch); err != nil {
			return sent, err
		}
		sent += p
		ids = ids[:0]
		for i := 0; i < p; i++ {
			v, err := cn.read()
			if err != nil {
				return sent, err
			}
			// [[key, [[id, [f, v]]]]], or a null reply once drained.
			if len(v.elems) == 1 && len(v.elems[0].elems) == 2 && len(v.elems[0].elems[1].elems) == 1 {
				ids = append(ids, v.elems[0].elems[1].elems[0].elems[0].str)
			}
		}
		if len(ids) == 0 {
			return sent, nil
		}
		batch = batch[:0]
		for _, id := range ids {
			batch = appendCommand(batch, "XACK", key, group, id)
		}
		if _, err := cn.c.Write(batch); err != nil {
			return sent, err
		}
		sent += len(ids)
		for range ids {
			v, err := cn.read()
			if err != nil {
				return sent, err
			}
			if v.str != "1" {
				return sent, fmt.Errorf("XACK replied %q", v.str)
			}
		}
	}
}

// respConn is a client connection with a reader of RESP2 replies.
type respConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialRESP(addr string) (*respConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &respConn{c: c, r: bufio.NewReaderSize(c, 1<<16)}, nil
}

// value is a parsed reply: a status, error, integer or bulk string in str
// (null as "" with null set), an array in elems.
type value struct {
	str   string
	null  bool
	err   bool
	elems []value
}

func (cn *respConn) do(args ...string) (value, error) {
	if _, err := cn.c.Write(appendCommand(nil, args...)); err != nil {
		return value{}, err
	}
	v, err := cn.read()
	if err == nil && v.err {
		err = fmt.Errorf("%s: %s", args[0], v.str)
	}
	return v, err
}

// pipelineN sends n commands made by gen in batches of 1000, reading every
// reply and failing on an error reply.
func (cn *respConn) pipelineN(n int, gen func(i int) []string) error {
	w := bufio.NewWriterSize(cn.c, 1<<16)
	var buf []byte
	const batch = 1000
	for i := 0; i < n; i += batch {
		m := min(batch, n-i)
		for j := 0; j < m; j++ {
			buf = appendCommand(buf[:0], gen(i+j)...)
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
		for j := 0; j < m; j++ {
			v, err := cn.read()
			if err != nil {
				return err
			}
			if v.err {
				return fmt.Errorf("command %d: %s", i+j, v.str)
			}
		}
	}
	return nil
}

func (cn *respConn) read() (value, error) {
	line, err := cn.r.ReadString('\n')
	if err != nil {
		return value{}, err
	}
	if len(line) < 3 {
		return value{}, fmt.Errorf("short reply line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', ':':
		return value{str: body}, nil
	case '-':
		return value{str: body, err: true}, nil
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return value{}, fmt.Errorf("bulk length %q: %w", body, err)
		}
		if n < 0 {
			return value{null: true}, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(cn.r, b); err != nil {
			return value{}, err
		}
		return value{str: string(b[:n])}, nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return value{}, fmt.Errorf("array length %q: %w", body, err)
		}
		if n < 0 {
			return value{null: true}, nil
		}
		v := value{elems: make([]value, n)}
		for i := range v.elems {
			if v.elems[i], err = cn.read(); err != nil {
				return value{}, err
			}
		}
		return v, nil
	}
	return value{}, fmt.Errorf("unexpected reply %q", line)
}

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(b []byte, args ...string) []byte {
	b = resp.AppendHeader(b, '*', len(args))
	for _, a := range args {
		b = resp.AppendBulkString(b, a)
	}
	return b
}

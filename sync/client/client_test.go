package client

import (
	"testing"

	"github.com/recached/recached/server"
)

func TestWriteAndDo(t *testing.T) {
	s := startServer(t, server.Config{})
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			c := newClient(t, Options{URL: s.url(tr)})
			ctx := ctx10(t)
			v, err := c.Write("SET", "wd:"+tr, "1").Wait(ctx)
			if err != nil || v.Text() != "OK" {
				t.Fatalf("SET: %v %v", v, err)
			}
			v, err = c.Write("INCR", "wd:"+tr).Wait(ctx)
			if err != nil || v.Int != 2 {
				t.Fatalf("INCR: %#v %v", v, err)
			}
			v, err = c.Do(ctx, "GET", "wd:"+tr)
			if err != nil || v.Text() != "2" {
				t.Fatalf("GET: %#v %v", v, err)
			}
			w := c.Write("HSET", "wd:"+tr, "f", "v")
			if _, err := w.Wait(ctx); err == nil || err.Error()[:9] != "WRONGTYPE" {
				t.Fatalf("HSET on a string: %v", err)
			}
		})
	}
}

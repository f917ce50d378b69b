package amaquet_test

import (
	"testing"

	"github.com/recached/recached/server/amaquet"
)

// TestMetricsTransport checks that the engine's connection metrics count
// an Amaquet session under "amaquet", not as RESP.
func TestMetricsTransport(t *testing.T) {
	e := start(t, amaquet.Options{}, "")
	c := dial(t, e.amq)
	c.do(amaquet.OpHello, 1, `{}`) // answered: the session exists
	got := e.srv.Metrics().Clients
	if got["amaquet"] != 1 || got["websocket"] != 0 {
		t.Fatalf("clients by transport: %v, want one amaquet", got)
	}
}

package realtime

import (
	"flag"
	"io"
	"log"
	"os"
	"testing"
)

// TestMain keeps the listeners' start lines out of the test output.
func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Verbose() {
		log.SetOutput(io.Discard)
	}
	os.Exit(m.Run())
}

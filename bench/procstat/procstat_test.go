package procstat

import (
	"os"
	"testing"
	"time"
)

// TestContextSwitches reads this process's switches: a sleep is a
// voluntary one, so the count grows across it; a process that does not
// exist reads 0.
func TestContextSwitches(t *testing.T) {
	before := ContextSwitches(os.Getpid())
	time.Sleep(10 * time.Millisecond)
	after := ContextSwitches(os.Getpid())
	if before <= 0 || after <= before {
		t.Fatalf("context switches before and after a sleep: %d, %d", before, after)
	}
	if n := ContextSwitches(1 << 30); n != 0 {
		t.Fatalf("context switches of no process: %d", n)
	}
}

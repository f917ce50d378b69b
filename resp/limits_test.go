package resp

import (
	"strings"
	"testing"
)

func TestParserLimits(t *testing.T) {
	big := strings.Repeat("x", 16385)
	tests := []struct {
		name    string
		limits  Limits
		in      string
		wantErr string
		wantN   int
	}{
		{"eleven args refused", UnauthenticatedLimits, "*11\r\n", "Protocol error: unauthenticated multibulk length", 0},
		{"ten args allowed", UnauthenticatedLimits, "*10\r\n", "", 0},
		{"big bulk refused", UnauthenticatedLimits, "*2\r\n$4\r\nAUTH\r\n$16385\r\n", "Protocol error: unauthenticated bulk length", 0},
		{"bulk at the bound", UnauthenticatedLimits, "*1\r\n$16384\r\n", "", 0},
		{"bulk past MaxBulkLen", UnauthenticatedLimits, "*1\r\n$100000000\r\n", "Protocol error: unauthenticated bulk length", 0},
		{"negative bulk", UnauthenticatedLimits, "*1\r\n$-2\r\n", "Protocol error: invalid bulk length", 0},
		{"no limits", Limits{}, "*2\r\n$3\r\nGET\r\n$16385\r\n" + big + "\r\n", "", 23 + 16385},
		{"invalid before unauthenticated", UnauthenticatedLimits, "*-x\r\n", "Protocol error: invalid multibulk length", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Parser
			p.SetLimits(tt.limits)
			n, err := p.Parse([]byte(tt.in))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr || n != tt.wantN {
				t.Errorf("Parse(%.40q) = %d, %q; want %d, %q", tt.in, n, got, tt.wantN, tt.wantErr)
			}
		})
	}
}

func TestLimitsMaxFrame(t *testing.T) {
	if n := (Limits{}).MaxFrame(); n != 0 {
		t.Errorf("zero limits: MaxFrame %d, want 0", n)
	}
	var p Parser
	p.SetLimits(UnauthenticatedLimits)
	// The largest request the limits allow must fit in MaxFrame.
	var b strings.Builder
	b.WriteString("*10\r\n")
	for i := 0; i < 10; i++ {
		b.WriteString("$16384\r\n" + strings.Repeat("v", 16384) + "\r\n")
	}
	if _, err := p.ParseFrame([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	if b.Len() > UnauthenticatedLimits.MaxFrame() {
		t.Errorf("largest request %d bytes > MaxFrame %d", b.Len(), UnauthenticatedLimits.MaxFrame())
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{"a\r\nb": "a  b", "plain": "plain", "\n": " "} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

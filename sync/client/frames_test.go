package client

import (
	"testing"

	"github.com/recached/recached/resp"
)

func parseFrame(t *testing.T, s string) resp.Value {
	t.Helper()
	v, n, err := resp.ParseValue([]byte(s))
	if err != nil || n != len(s) {
		t.Fatalf("ParseValue(%q): n %d, err %v", s, n, err)
	}
	return v
}

func TestClassify(t *testing.T) {
	watched := func(key []byte) bool { return string(key) != "other" }
	tests := []struct {
		frame string
		want  FrameKind
	}{
		// Replies: anything not matching a push or tagged-frame shape.
		{"+OK\r\n", FrameReply},
		{"+DUP\r\n", FrameReply},
		{"-ERR x\r\n", FrameReply},
		{":3\r\n", FrameReply},
		{"$-1\r\n", FrameReply},
		{"*-1\r\n", FrameReply},
		{"*0\r\n", FrameReply},
		{"%1\r\n+a\r\n:1\r\n", FrameReply},
		{"*2\r\n$1\r\na\r\n$1\r\nb\r\n", FrameReply},
		// qstate is the reply to its QSUB.
		{"*4\r\n$6\r\nqstate\r\n$3\r\nu:*\r\n$3\r\nu:1\r\n$1\r\nv\r\n", FrameReply},
		{"*2\r\n$6\r\nqstate\r\n$3\r\nu:*\r\n", FrameReply},
		// Keychange: the three-element array, for a key of interest.
		{"*3\r\n$9\r\nkeychange\r\n$1\r\nk\r\n$1\r\nv\r\n", FrameKeychange},
		{"*3\r\n$9\r\nkeychange\r\n$1\r\nk\r\n$-1\r\n", FrameKeychange},
		{"*3\r\n$9\r\nkeychange\r\n$1\r\nk\r\n+hash\r\n", FrameKeychange},
		{"*3\r\n$9\r\nkeychange\r\n$1\r\nk\r\n_\r\n", FrameKeychange},
		// …not for a key the client has no interest in, nor in other
		// shapes: those are replies that happen to start with the word.
		{"*3\r\n$9\r\nkeychange\r\n$5\r\nother\r\n$1\r\nv\r\n", FrameReply},
		{"*3\r\n+keychange\r\n$1\r\nk\r\n$1\r\nv\r\n", FrameReply},
		{"*3\r\n$9\r\nkeychange\r\n$1\r\nk\r\n:1\r\n", FrameReply},
		{"*2\r\n$9\r\nkeychange\r\n$1\r\nk\r\n", FrameReply},
		{"*4\r\n$9\r\nkeychange\r\n$1\r\nk\r\n$1\r\nv\r\n$1\r\nw\r\n", FrameReply},
		{"*3\r\n$9\r\nKEYCHANGE\r\n$1\r\nk\r\n$1\r\nv\r\n", FrameReply},
		// Pushes: pub/sub deliveries by their tag, every other push a
		// mutation.
		{">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\np\r\n", FramePubSub},
		{">4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$1\r\np\r\n", FramePubSub},
		{">3\r\n$8\r\nsmessage\r\n$2\r\nch\r\n$1\r\np\r\n", FramePubSub},
		{">4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$7\r\nKEEPTTL\r\n", FrameMutation},
		{">1\r\n$7\r\nFLUSHDB\r\n", FrameMutation},
		{">3\r\n$4\r\nJSET\r\n$1\r\nk\r\n$1\r\n1\r\n", FrameMutation},
		{">0\r\n", FrameMutation},
		// RESP3 subscription confirmations (the RESP port's replies to
		// SUBSCRIBE and its kin).
		{">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", FrameConfirm},
		{">3\r\n$12\r\npunsubscribe\r\n$-1\r\n:0\r\n", FrameConfirm},
	}
	for _, tt := range tests {
		if got := Classify(parseFrame(t, tt.frame), watched); got != tt.want {
			t.Errorf("Classify(%q) = %v, want %v", tt.frame, got, tt.want)
		}
	}
	// With no interest filter every well-formed keychange is one.
	if got := Classify(parseFrame(t, "*3\r\n$9\r\nkeychange\r\n$5\r\nother\r\n$1\r\nv\r\n"), nil); got != FrameKeychange {
		t.Errorf("Classify without a filter = %v", got)
	}
}

func TestQueue(t *testing.T) {
	var q queue[int]
	for i := range 10 {
		q.push(i)
	}
	for i := range 6 {
		if v, ok := q.pop(); !ok || v != i {
			t.Fatalf("pop = %d %v, want %d", v, ok, i)
		}
	}
	for i := 10; i < 40; i++ {
		q.push(i)
	}
	q.removeAt(1) // 7
	q.filter(func(v int) bool { return v%2 == 0 })
	var got []int
	for q.len() > 0 {
		v, _ := q.pop()
		got = append(got, v)
	}
	if len(got) != 17 || got[0] != 6 || got[1] != 8 || got[16] != 38 {
		t.Errorf("queue drained %v", got)
	}
	if _, ok := q.front(); ok {
		t.Error("front of an empty queue")
	}
}

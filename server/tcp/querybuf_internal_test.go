package tcp

import (
	"bytes"
	"testing"
)

// TestQueryBufSizing follows a buffer through Redis's sizing steps: the
// room a read makes, the growth for a big argument, the cron's trims.
func TestQueryBufSizing(t *testing.T) {
	type step struct {
		add     int   // bytes arriving (0: none)
		need    int   // the parser's pending request size
		consume int   // bytes run after the read (-1: all)
		cron    bool  // a cron visit after the step
		idle    int64 // the client's idle seconds at the visit
		wantLen int
		wantCap int
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"first read makes room for 16 KB", []step{
			{add: 40, consume: -1, wantLen: 0, wantCap: ioBufLen},
		}},
		{"idle for more than 2 s frees the room", []step{
			{add: 40, consume: -1, wantCap: ioBufLen},
			{cron: true, idle: 2, wantCap: ioBufLen},
			{cron: true, idle: 3, wantCap: 0},
		}},
		{"a partial request keeps its bytes when idle", []step{
			{add: 100, consume: 0, wantLen: 100, wantCap: ioBufLen},
			{cron: true, idle: 5, wantLen: 100, wantCap: 100},
		}},
		{"a big argument grows to what it needs, no further", []step{
			{add: 60000, need: 0, consume: 0, wantLen: 60000, wantCap: 60000},
			{add: 60000, need: 400030, consume: 0, wantLen: 120000, wantCap: 120000},
			{add: 200000, need: 400030, consume: 0, wantLen: 320000, wantCap: 320000},
			{add: 80030, need: 400030, consume: -1, wantLen: 0, wantCap: 400030},
		}},
		{"a big buffer shrinks to the last peak", []step{
			{add: 100000, need: 100000, consume: -1, wantCap: 100000},
			{cron: true, wantCap: 100000}, // the peak was the big read
			{add: 50, consume: -1, wantCap: 100000},
			{cron: true, wantCap: ioBufLen},
		}},
		{"no trim under 32 KB", []step{
			{add: 30000, consume: -1, wantCap: 30000},
			{cron: true},
			{add: 10, consume: -1, cron: true, wantCap: 30000},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q queryBuf
			for i, st := range tt.steps {
				if st.add > 0 {
					q.add(bytes.Repeat([]byte{'x'}, st.add), st.need)
					off := st.consume
					if off < 0 {
						off = len(q.b)
					}
					q.consume(off)
				}
				if st.cron {
					q.cron(st.idle, 0)
				}
				if st.wantCap == 0 && st.cron && st.idle == 0 {
					continue // a step that only moves the peak
				}
				if len(q.b) != st.wantLen || cap(q.b) != st.wantCap {
					t.Fatalf("step %d: len %d cap %d, want len %d cap %d", i, len(q.b), cap(q.b), st.wantLen, st.wantCap)
				}
			}
		})
	}
}

// FuzzQueryBuf feeds a stream in chunks, running a prefix of the buffer
// after each and visiting the cron: the bytes held are always the stream
// not yet run, in order.
func FuzzQueryBuf(f *testing.F) {
	f.Add([]byte("*1\r\n$4\r\nPING\r\n"), []byte{3, 200, 7, 255, 0, 40})
	f.Add(bytes.Repeat([]byte("abc"), 30000), []byte{255, 255, 1, 2, 3})
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		var q queryBuf
		var want []byte
		for i := 0; len(stream) > 0 && i < 1000; i++ {
			c := 1
			if len(cuts) > 0 {
				c = int(cuts[i%len(cuts)])*257 + 1
			}
			c = min(c, len(stream))
			q.add(stream[:c], c*int(cuts0(cuts, i)))
			want = append(want, stream[:c]...)
			stream = stream[c:]
			run := len(q.b) * int(cuts0(cuts, i+1)) / 255
			q.consume(run)
			want = want[run:]
			q.cron(int64(cuts0(cuts, i+2)%4), 0)
			if !bytes.Equal(q.b, want) {
				t.Fatalf("held %d bytes, want %d", len(q.b), len(want))
			}
		}
	})
}

// cuts0 is cuts[i] cycling, 0 when cuts is empty.
func cuts0(cuts []byte, i int) byte {
	if len(cuts) == 0 {
		return 0
	}
	return cuts[i%len(cuts)]
}

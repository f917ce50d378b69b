package realtime

import (
	"sync"
	"testing"
)

func TestZZConcurrentPublishers(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	var subs []*client
	for i := 0; i < 2; i++ {
		c, _ := r.connect(t, keyQuery("k3"))
		c.request(sub("s", "bench"))
		subs = append(subs, c)
	}
	var wg sync.WaitGroup
	for p := 0; p < 4; p++ {
		c, _ := r.connect(t, keyQuery("k3"))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				c.ws.WriteJSON(map[string]any{"op": opPublish, "id": "x", "channel": "bench", "data": i})
			}
		}()
	}
	wg.Wait()
	for _, c := range subs {
		for i := 0; i < 400; i++ {
			c.expect(opMessage, nil)
		}
	}
}

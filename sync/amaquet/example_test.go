package amaquet_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/recached/recached/sync/amaquet"
)

// Connect with the server's pinned identity (the output of `recached
// amaquet-identity --dir D`), run commands concurrently, cancel a blocked
// one through its context, and subscribe.
func Example() {
	pub, err := base64.StdEncoding.DecodeString("A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg=")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	c, err := amaquet.Dial(ctx, "127.0.0.1:6382", amaquet.Options{PublicKey: ed25519.PublicKey(pub)})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if _, err := c.Do(ctx, "SET", "greeting", "hello"); err != nil {
		log.Fatal(err)
	}
	v, err := c.Do(ctx, "GET", "greeting")
	fmt.Println(v, err)

	// A BLPOP that nobody feeds ends when its context does: the client
	// sends CANCEL and the server stops waiting.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = c.Do(short, "BLPOP", "jobs", 0)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))

	_, err = c.Do(ctx, "RENAME", "missing", "other")
	fmt.Println(errors.Is(err, amaquet.ErrNotFound))

	sub, err := c.Subscribe(ctx, "bus", "updates", 16)
	if err != nil {
		log.Fatal(err)
	}
	for ev := range sub.C {
		fmt.Printf("%s %s: %s\n", ev.Channel, ev.Type, ev.Data)
	}
}

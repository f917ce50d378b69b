package main

import (
	"errors"
	"log"
	"syscall"
)

// optional runs the listener of a protocol served beside RESP (the
// WebSocket bridge, the realtime and Amaquet ports) and reports whether
// its failure must stop the server. A port left at its default that
// another process already holds (a second recached on the same machine,
// started like a second redis-server with only --port) is skipped with a
// warning, so the RESP server still starts; a port chosen explicitly, or
// any other failure, stops the server.
func optional(name string, port, defaultPort int, err error) (fatal bool) {
	if err == nil {
		return false
	}
	if port == defaultPort && errors.Is(err, syscall.EADDRINUSE) {
		log.Printf("recached: %s port %d is in use; %s disabled (set its port flag to serve it elsewhere)", name, port, name)
		return false
	}
	return true
}

// Package wire holds the opcodes of the Blackevin realtime protocol (seed
// 003), which the server (server/realtime) and the Go client
// (sync/realtime) both speak. The numbers are frozen: nothing on the wire
// carries a name.
package wire

// The opcodes: C→S requests, S→C deliveries and replies, and the heartbeat
// both send.
const (
	Attach         = 1  // C→S: mark a channel attached, the gate for presence
	Detach         = 2  // C→S: unmark it
	Publish        = 3  // C→S: publish a message
	Message        = 4  // S→C: a delivered publish
	PresenceEnter  = 5  // C→S: enter presence
	PresenceLeave  = 6  // C→S: leave presence
	PresenceUpdate = 7  // C→S: update presence data
	Presence       = 8  // S→C: a presence change
	Ack            = 9  // S→C: success of a request that carried an id
	Nack           = 10 // S→C: failure, with a code and a message
	Heartbeat      = 11 // C↔S: keepalive
	Connected      = 12 // S→C: welcome, with the connection id
	Subscribe      = 13 // C→S: subscribe to a channel
	Unsubscribe    = 14 // C→S: unsubscribe
	Auth           = 15 // C→S: swap the credential mid-session
)

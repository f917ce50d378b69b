// Package amaquet serves the Amaquet binary protocol (seed 000, SPEC
// section 10) on --amaquet-port: 24-byte framed requests carrying JSON,
// many COMMAND requests in flight on one connection answered out of
// order, CANCEL, explicit overload errors, an Ed25519-signed HELLO, API key
// AUTH and bus subscriptions. Commands run on the engine's sessions through
// the one command table, so a write over Amaquet has the same effects,
// scope checks, log records and notifications as over RESP.
package amaquet

package amaquet

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/recached/recached/server"
	"github.com/recached/recached/sync/apikey"
)

// decodeStrict decodes a JSON object payload into v, refusing unknown
// fields and trailing data: the small opcodes' payloads.
func decodeStrict(p []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(p))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("bad payload: %v", err)
	}
	if d.More() {
		return fmt.Errorf("bad payload: data after the object")
	}
	return nil
}

// helloResult is HELLO's result.
type helloResult struct {
	Server       string `json:"server"`
	Version      string `json:"version"`
	Protocol     int    `json:"protocol"`
	MaxPayload   int    `json:"max_payload"`
	MaxInflight  int    `json:"max_inflight"`
	AuthRequired bool   `json:"auth_required"`
	PublicKey    string `json:"public_key"`
	Signature    string `json:"signature"`
}

// hello answers HELLO {"nonce":"<base64 of 16–64 bytes>"} with the
// server's metadata and its signature of the nonce.
func (c *conn) hello(h Header, p []byte, reserved int64) {
	var req struct {
		Nonce *string `json:"nonce"`
	}
	if err := decodeStrict(p, &req); err != nil {
		c.respondError(h.ID, h.Opcode, CodeBadRequest, err.Error(), reserved)
		return
	}
	if req.Nonce == nil {
		c.respondError(h.ID, h.Opcode, CodeBadRequest, `missing field "nonce"`, reserved)
		return
	}
	nonce, err := base64.StdEncoding.DecodeString(*req.Nonce)
	if err != nil || len(nonce) < 16 || len(nonce) > 64 {
		c.respondError(h.ID, h.Opcode, CodeBadRequest, `"nonce" must be the base64 of 16 to 64 bytes`, reserved)
		return
	}
	c.respondJSON(h.ID, h.Opcode, helloResult{
		Server:       "recached",
		Version:      server.Version,
		Protocol:     Version,
		MaxPayload:   c.l.opt.MaxPayload,
		MaxInflight:  c.l.opt.MaxInflight,
		AuthRequired: c.authRequired(),
		PublicKey:    c.l.pub,
		Signature:    base64.StdEncoding.EncodeToString(signHello(c.l.opt.Identity, nonce)),
	}, reserved)
}

// auth answers AUTH {"api_key":"<secret>.<keyId>"}: on success the key's
// "keys" patterns scope every later COMMAND and its capability the
// channels of SUBSCRIBE and of the commands that name channels. A failed
// AUTH leaves the connection as it was.
func (c *conn) auth(h Header, p []byte, reserved int64) {
	var req struct {
		APIKey *string `json:"api_key"`
	}
	if err := decodeStrict(p, &req); err != nil {
		c.respondError(h.ID, h.Opcode, CodeBadRequest, err.Error(), reserved)
		return
	}
	if req.APIKey == nil {
		c.respondError(h.ID, h.Opcode, CodeBadRequest, `missing field "api_key"`, reserved)
		return
	}
	store := c.srv.APIKeys()
	if store == nil {
		c.respondError(h.ID, h.Opcode, CodeUnauthenticated, "no API keys are configured (--api-keys)", reserved)
		return
	}
	k, err := store.Authenticate(*req.APIKey)
	if err != nil {
		c.respondError(h.ID, h.Opcode, CodeUnauthenticated, err.Error(), reserved)
		return
	}
	c.grant(k)
	c.respondJSON(h.ID, h.Opcode, struct {
		Authenticated bool   `json:"authenticated"`
		KeyID         string `json:"key_id"`
	}{true, k.ID}, reserved)
}

// grant makes k the connection's key: its sessions take the key's scope
// before their next request (slot.gen).
func (c *conn) grant(k *apikey.Key) {
	capab := k.Capability
	c.key = k
	c.authed = true
	c.scope = k.Keys
	c.chans = func(ch []byte) bool { return capab.Allows(string(ch), apikey.OpPublish) }
	c.gen++
}

// cancel answers CANCEL {"request_id":N}: an active request's wait is
// ended, or its script stopped unless it has written (it then answers
// CANCELLED); one that already completed, or was never sent, is not
// found.
func (c *conn) cancel(h Header, p []byte, reserved int64) {
	var req struct {
		RequestID *uint64 `json:"request_id"`
	}
	if err := decodeStrict(p, &req); err != nil {
		c.respondError(h.ID, h.Opcode, CodeBadRequest, err.Error(), reserved)
		return
	}
	if req.RequestID == nil {
		c.respondError(h.ID, h.Opcode, CodeBadRequest, `missing field "request_id"`, reserved)
		return
	}
	id := *req.RequestID
	c.mu.Lock()
	sl := c.active[id]
	c.mu.Unlock()
	if sl != nil && !sl.s.CancelWait() {
		// Not a blocking command's wait: a script, stopped as SCRIPT KILL
		// would unless it has written (then it runs to its end and
		// answers its own result). killing is set first, as the
		// script's end may be collected before KillScript returns.
		sl.killing.Store(true)
		if _, killed := sl.s.KillScript(); !killed {
			sl.killing.Store(false)
		}
	}
	// The result, written out: a client that cancels many calls sends
	// many CANCELs.
	b := AppendHeader(nil, KindResponse, h.Opcode, h.ID, 0)
	b = append(b, `{"ok":true,"result":{"request_id":`...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, `,"found":`...)
	b = strconv.AppendBool(b, sl != nil)
	b = append(b, "}}"...)
	setLength(b)
	c.queue(b, reserved)
}

// checkKey closes a connection whose API key a reload revoked or
// changed; it reports false then.
func (c *conn) checkKey() bool {
	if c.key == nil {
		return true
	}
	if store := c.srv.APIKeys(); store != nil && store.Current(c.key) {
		return true
	}
	c.respondError(0, 0, CodeUnauthenticated, "the connection's API key was revoked", 0)
	return false
}

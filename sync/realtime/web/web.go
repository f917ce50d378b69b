// Package web embeds realtime-client, the browser client of the realtime
// protocol (realtime-client.js, its TypeScript declarations
// realtime-client.d.ts and package.json), so that the realtime port can
// serve it: GET /realtime-client.js, GET /realtime-client.d.ts.
//
// The package is a leaf: the realtime transport imports it, never the
// reverse.
package web

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"net/http"
	"time"
)

//go:embed realtime-client.js
var clientJS []byte

//go:embed realtime-client.d.ts
var clientDTS []byte

// Patterns are the ServeMux patterns Handler answers.
var Patterns = []string{"GET /realtime-client.js", "GET /realtime-client.d.ts"}

// Handler serves the embedded client with an ETag, to any origin (access to
// channels is granted by the credential, not by origin). Build it with
// NewHandler; it is safe for concurrent use.
type Handler struct {
	files map[string]file // by URL path
}

type file struct {
	body        []byte
	contentType string
	etag        string
}

// NewHandler returns a handler of the embedded files.
func NewHandler() *Handler {
	h := &Handler{files: make(map[string]file)}
	for p, f := range map[string]file{
		"/realtime-client.js":   {body: clientJS, contentType: "text/javascript; charset=utf-8"},
		"/realtime-client.d.ts": {body: clientDTS, contentType: "application/typescript; charset=utf-8"},
	} {
		sum := sha256.Sum256(f.body)
		f.etag = `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
		h.files[p] = f
	}
	return h
}

// Register mounts the handler on mux at Patterns.
func (h *Handler) Register(mux *http.ServeMux) {
	for _, p := range Patterns {
		mux.Handle(p, h)
	}
}

// ServeHTTP answers GET and HEAD of the embedded files.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, ok := h.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", f.contentType)
	hd.Set("ETag", f.etag)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Access-Control-Allow-Origin", "*")
	// ServeContent answers If-None-Match against the ETag set above, and HEAD.
	http.ServeContent(w, r, r.URL.Path, time.Time{}, bytes.NewReader(f.body))
}

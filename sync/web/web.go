// Package web serves recached-edge, the browser client of the sync protocol,
// and its demo from the WebSocket bridge's HTTP server: GET /recached-edge.js
// (an ES module a page imports straight from the server),
// GET /recached-edge.d.ts (its TypeScript declarations) and GET /demo/… (a
// small collaborative app built on it).
//
// The files are embedded in the binary. The package is a leaf: the bridge
// (server/ws) imports it, never the reverse.
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed recached-edge.js recached-edge.d.ts demo
var files embed.FS

// asset is one embedded file, ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// Handler serves the embedded client and demo. Build it once with
// NewHandler; it is safe for concurrent use.
type Handler struct {
	assets map[string]asset // by URL path
}

// contentTypes fixes the types of the extensions the package serves, so
// that they do not depend on the machine's MIME tables.
var contentTypes = map[string]string{
	".js":   "text/javascript; charset=utf-8",
	".ts":   "application/typescript; charset=utf-8",
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".json": "application/json",
}

// NewHandler returns a handler of the embedded files.
func NewHandler() *Handler {
	h := &Handler{assets: make(map[string]asset)}
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		ext := path.Ext(p)
		ct, ok := contentTypes[ext]
		if !ok {
			ct = mime.TypeByExtension(ext)
		}
		if ct == "" {
			ct = "application/octet-stream"
		}
		sum := sha256.Sum256(body)
		h.assets["/"+p] = asset{body: body, contentType: ct, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		// The files are compiled in: reading them cannot fail.
		panic("web: embedded files: " + err.Error())
	}
	if a, ok := h.assets["/demo/index.html"]; ok {
		h.assets["/demo/"] = a
	}
	return h
}

// Patterns are the ServeMux patterns the handler answers.
var Patterns = []string{"GET /recached-edge.js", "GET /recached-edge.d.ts", "GET /demo/", "GET /demo"}

// Register mounts the handler on mux at Patterns.
func (h *Handler) Register(mux *http.ServeMux) {
	for _, p := range Patterns {
		mux.Handle(p, h)
	}
}

// ServeHTTP answers GET and HEAD for the embedded files, with an ETag so
// that browsers revalidate instead of downloading again.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	if p == "/demo" {
		http.Redirect(w, r, "/demo/", http.StatusMovedPermanently)
		return
	}
	a, ok := h.assets[p]
	if !ok {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", a.contentType)
	hd.Set("ETag", a.etag)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Content-Type-Options", "nosniff")
	if p == "/recached-edge.js" || p == "/recached-edge.d.ts" {
		// Any origin may import the client; access to data is granted in
		// band (AUTH, SYNC TOKEN), not by origin.
		hd.Set("Access-Control-Allow-Origin", "*")
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatch(inm, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(a.body)
}

// etagMatch reports whether an If-None-Match header lists etag.
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		t = strings.TrimPrefix(t, "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

package web

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

func TestHandlerServesTheEmbeddedFiles(t *testing.T) {
	mux := http.NewServeMux()
	NewHandler().Register(mux)
	js, err := os.ReadFile("recached-edge.js")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, path string
		code         int
		ctype        string
		body         string // a prefix of the body, or the location of a redirect
	}{
		{"GET", "/recached-edge.js", 200, "text/javascript; charset=utf-8", string(js[:200])},
		{"HEAD", "/recached-edge.js", 200, "text/javascript; charset=utf-8", ""},
		{"GET", "/recached-edge.d.ts", 200, "application/typescript; charset=utf-8", "// Type declarations"},
		{"GET", "/demo/", 200, "text/html; charset=utf-8", "<!doctype html>"},
		{"GET", "/demo/index.html", 200, "text/html; charset=utf-8", "<!doctype html>"},
		{"GET", "/demo/app.js", 200, "text/javascript; charset=utf-8", "// The recached-edge demo"},
		{"GET", "/demo/style.css", 200, "text/css; charset=utf-8", ":root"},
		{"GET", "/demo", 301, "", "/demo/"},
		{"GET", "/demo/missing.js", 404, "", ""},
		{"GET", "/demo/../go.mod", 307, "", "/go.mod"}, // the mux cleans the path; nothing outside is served
		{"POST", "/recached-edge.js", 405, "", ""},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(tt.method, tt.path, nil)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != tt.code {
			t.Errorf("%s %s: status %d, want %d", tt.method, tt.path, rec.Code, tt.code)
			continue
		}
		if tt.ctype != "" && rec.Header().Get("Content-Type") != tt.ctype {
			t.Errorf("%s %s: Content-Type %q, want %q", tt.method, tt.path, rec.Header().Get("Content-Type"), tt.ctype)
		}
		switch {
		case tt.code == 301 || tt.code == 307:
			if loc := rec.Header().Get("Location"); loc != tt.body {
				t.Errorf("%s %s: Location %q, want %q", tt.method, tt.path, loc, tt.body)
			}
		case !strings.HasPrefix(rec.Body.String(), tt.body):
			t.Errorf("%s %s: body starts %q, want %q", tt.method, tt.path, rec.Body.String()[:min(40, rec.Body.Len())], tt.body)
		}
	}
}

func TestHandlerRevalidatesWithETag(t *testing.T) {
	h := NewHandler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/recached-edge.js", nil))
	etag := rec.Header().Get("ETag")
	if etag == "" || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("headers %v: want an ETag and Cache-Control: no-cache", rec.Header())
	}
	for _, tt := range []struct {
		inm  string
		code int
	}{
		{etag, 304},
		{`"other", ` + etag, 304},
		{"W/" + etag, 304},
		{"*", 304},
		{`"other"`, 200},
	} {
		req := httptest.NewRequest("GET", "/recached-edge.js", nil)
		req.Header.Set("If-None-Match", tt.inm)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.code {
			t.Errorf("If-None-Match %s: status %d, want %d", tt.inm, rec.Code, tt.code)
		}
		if tt.code == 304 && rec.Body.Len() != 0 {
			t.Errorf("If-None-Match %s: a 304 with a body", tt.inm)
		}
	}
}

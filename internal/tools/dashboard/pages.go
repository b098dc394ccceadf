package dashboard

import (
	"bytes"
	"embed"
	"html"
	"io/fs"
	"net/http"

	"github.com/throttler/throttler/internal/buildinfo"
)

// web holds the page: one HTML file, its script and its style sheet, all
// embedded, so the dashboard works offline (no CDN, no font or script
// from elsewhere).
//
//go:embed web
var web embed.FS

// pages serves the page at its routes (the script reads the path) and the
// assets under /assets/.
func pages(mux *http.ServeMux) {
	assets, err := fs.Sub(web, "web")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	index, err := fs.ReadFile(assets, "index.html")
	if err != nil {
		panic(err)
	}
	// The footer says which build serves the page.
	index = bytes.Replace(index, []byte("{{version}}"), []byte(html.EscapeString(buildinfo.Get().Short())), 1)
	page := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(index)
	}
	mux.HandleFunc("GET /{$}", page)
	mux.HandleFunc("GET /budgets/{name}", page)
	mux.HandleFunc("GET /experiments", page)
	mux.HandleFunc("GET /workers", page)
	files := http.StripPrefix("/assets/", http.FileServerFS(assets))
	mux.Handle("GET /assets/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
}

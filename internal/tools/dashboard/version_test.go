package dashboard

import (
	"html"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/throttler/throttler/internal/buildinfo"
)

// TestPageFooterShowsVersion: the page's footer names the build serving it.
func TestPageFooterShowsVersion(t *testing.T) {
	url := serve(t, New(newFake()))
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := `<footer class="foot" id="version">` + html.EscapeString(buildinfo.Get().Short()) + `</footer>`
	if !strings.Contains(string(body), want) || strings.Contains(string(body), "{{version}}") {
		t.Fatalf("page lacks %s:\n%s", want, body)
	}
}

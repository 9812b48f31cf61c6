package perf

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// The capture asks every service for the same window and writes each profile by name; a
// service that cannot be profiled is an error, not a silently missing file.
func TestProfileCapture(t *testing.T) {
	var asked []string
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Path+"?"+r.URL.RawQuery)
		_, _ = w.Write([]byte("profile-bytes"))
	}))
	defer ok.Close()
	broken := httptest.NewServer(http.NotFoundHandler())
	defer broken.Close()
	dir := t.TempDir()
	p := &profileCapture{length: 3 * time.Second, metrics: map[string]string{
		"writer": strings.TrimPrefix(ok.URL, "http://"), "gateway": strings.TrimPrefix(broken.URL, "http://")}}
	paths, err := p.start(context.Background(), dir)()
	if err == nil || !strings.Contains(err.Error(), "profile gateway") {
		t.Fatalf("err = %v, want the gateway's failure named", err)
	}
	if len(asked) != 1 || asked[0] != "/debug/pprof/profile?seconds=3" {
		t.Errorf("requests %v", asked)
	}
	want := filepath.Join(dir, "pprof-writer.pb.gz")
	if len(paths) == 0 || paths[0] != want {
		t.Fatalf("paths %v, want %s first", paths, want)
	}
	if b, err := os.ReadFile(want); err != nil || string(b) != "profile-bytes" {
		t.Errorf("profile file %q, %v", b, err)
	}
}

// The profile covers the middle of the window, whole seconds, never the endpoint's 0 = 30 s.
func TestProfileWindow(t *testing.T) {
	set, err := svc.New("/nonexistent/qim", stack.Endpoints{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ d, lead, length time.Duration }{
		{180 * time.Second, 45 * time.Second, 30 * time.Second},
		{40 * time.Second, 10 * time.Second, 20 * time.Second},
		{time.Second, 250 * time.Millisecond, time.Second},
	} {
		p := newProfileCapture(set, c.d)
		if p.lead != c.lead || p.length != c.length || len(p.metrics) == 0 {
			t.Errorf("window %s: lead %s length %s (%d services), want %s and %s", c.d, p.lead, p.length, len(p.metrics), c.lead, c.length)
		}
	}
}

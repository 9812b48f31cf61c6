package perf

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/qim-dev/qim/gates/svc"
)

// profileCapture takes one CPU profile of every service of the deployment while the measured
// load runs: it waits lead, then asks each service's /debug/pprof/profile for seconds s at the
// same time, so the profiles cover the same window. Each profile is written to
// <report dir>/pprof-<service>.pb.gz with a `go tool pprof -top` summary beside it
// (pprof-<service>.txt) when the Go tool is on PATH.
//
// A failed capture is recorded as a failed "profiles" check: the operator asked for evidence
// and must not mistake its absence for a quiet service.
type profileCapture struct {
	lead, length time.Duration
	metrics      map[string]string // service → metrics address
}

// newProfileCapture profiles the middle of a window of length d: half of it, 1 to 30 s,
// starting after a quarter of the window (so connections and batches have settled). The
// profile endpoint counts whole seconds and reads 0 as its 30 s default, hence the floor.
func newProfileCapture(set *svc.Set, d time.Duration) *profileCapture {
	length := max(time.Second, min(30*time.Second, d/2))
	return &profileCapture{lead: d / 4, length: length, metrics: set.Addrs.Metrics}
}

// start runs the capture in the background; wait returns the written artifact paths.
func (p *profileCapture) start(ctx context.Context, dir string) (wait func() ([]string, error)) {
	done := make(chan struct{})
	var paths []string
	var firstErr error
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
			firstErr = ctx.Err()
			return
		case <-time.After(p.lead):
		}
		paths, firstErr = p.captureAll(ctx, dir)
	}()
	return func() ([]string, error) {
		<-done
		return paths, firstErr
	}
}

func (p *profileCapture) captureAll(ctx context.Context, dir string) ([]string, error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var paths []string
	var firstErr error
	for name, addr := range p.metrics {
		if base, _ := svc.ServiceOf(name); !slices.Contains(svc.Order, base) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := filepath.Join(dir, "pprof-"+name+".pb.gz")
			err := fetchProfile(ctx, addr, p.length, out)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("gates: profile %s: %w", name, err)
				}
				return
			}
			paths = append(paths, out)
			if txt, err := topSummary(ctx, out); err == nil {
				paths = append(paths, txt)
			}
		}()
	}
	wg.Wait()
	return paths, firstErr
}

func fetchProfile(ctx context.Context, addr string, d time.Duration, out string) error {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(d.Seconds()))
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// topSummary writes `go tool pprof -top` of a profile beside it (a convenience for the note and
// the report; the profile itself is the evidence).
func topSummary(ctx context.Context, profile string) (string, error) {
	txt := profile[:len(profile)-len(".pb.gz")] + ".txt"
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=40", profile).Output()
	if err != nil {
		return "", err
	}
	return txt, os.WriteFile(txt, out, 0o644)
}

package stack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// DownProject stops the process stack named name (qim-it-<id>) under root from its pid files
// alone — for `qim-gate stack down --project NAME` in another process than the one that
// started it — then removes its directory. A recorded pid is signalled (as a process group:
// SIGTERM, DefaultGrace, SIGKILL) only if it is still the process we started: same start time,
// and its command line or working directory lies in the project directory. A missing project
// returns an error wrapping fs.ErrNotExist.
func DownProject(root, name string) error {
	if !strings.HasPrefix(name, projectPrefix) || strings.ContainsRune(name, os.PathSeparator) {
		return fmt.Errorf("stack: %q is not a project name (want %s<id>)", name, projectPrefix)
	}
	dir, err := filepath.Abs(filepath.Join(root, name))
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("stack: project %s: %w", name, err)
	}
	recs, err := readPids(dir)
	if err != nil {
		return err
	}
	errs := make([]error, len(recs))
	var wg sync.WaitGroup
	for i, r := range recs {
		if !r.ours(dir) {
			continue // already gone, or the pid now belongs to someone else
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = stopGroup(r.pid, DefaultGrace, func() bool { return !r.alive() })
		}()
	}
	wg.Wait()
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// GC removes the qim-it-* directories under root whose recorded server processes are all gone
// (left behind by a test binary that crashed or was killed: its servers died with it). A
// directory without pid files is removed only once it is older than 10 minutes, so a stack that
// is just starting is never collected. It returns the names it removed.
func GC(root string) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(root, projectPrefix+"*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, dir := range dirs {
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() {
			continue
		}
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		recs, err := readPids(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(recs) == 0 && time.Since(fi.ModTime()) < 10*time.Minute {
			continue
		}
		live := false
		for _, r := range recs {
			if r.ours(dir) {
				live = true
				break
			}
		}
		if live {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, filepath.Base(dir))
	}
	return removed, errors.Join(errs...)
}

// Attach returns a Stack for a stack that another process started and described in
// endpoints.json (path to the file or its project directory). Up runs Verify, Down does
// nothing (the stack is not ours to stop), Logs reads <dir>/logs, Check watches the recorded
// pids of a process-provider stack.
func Attach(path string) (Stack, error) {
	ep, err := ReadEndpoints(path)
	if err != nil {
		return nil, err
	}
	return &attached{ep: ep}, nil
}

type attached struct{ ep Endpoints }

func (a *attached) Up(ctx context.Context) error {
	if err := a.Check(ctx); err != nil {
		return err
	}
	return Verify(ctx, a.ep)
}

func (a *attached) Down(context.Context) error { return nil }
func (a *attached) Endpoints() Endpoints       { return a.ep }

func (a *attached) Logs(server string, n int) (string, error) {
	if a.ep.Dir == "" {
		return "", fmt.Errorf("stack: no log directory for %s", server)
	}
	return tailFile(filepath.Join(a.ep.Dir, "logs", server+".log"), n)
}

func (a *attached) Check(ctx context.Context) error {
	if a.ep.Dir == "" || a.ep.Provider != "process" {
		return ctx.Err()
	}
	recs, err := readPids(a.ep.Dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, r := range recs {
		if !r.alive() {
			tail, _ := a.Logs(r.server, 50)
			return &ServerDiedError{Server: r.server, Detail: fmt.Sprintf("pid %d is gone", r.pid), LogTail: tail}
		}
	}
	return ctx.Err()
}

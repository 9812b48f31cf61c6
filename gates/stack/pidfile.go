package stack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Project directory layout (process provider):
//
//	<root>/qim-it-<id>/endpoints.json    written once every server is ready
//	                  pids/<server>.pid  "<pid> <starttime>" (starttime: field 22 of /proc/<pid>/stat)
//	                  logs/<server>.log  stdout+stderr of the server
//	                  conf/              generated configuration files
//	                  data/<server>/     server data
const endpointsFile = "endpoints.json"

type pidRec struct {
	server    string
	pid       int
	startTime uint64
}

func writePid(dir, server string, pid int) error {
	st, err := procStartTime(pid)
	if err != nil {
		return fmt.Errorf("stack: read start time of %s pid %d: %w", server, pid, err)
	}
	return os.WriteFile(filepath.Join(dir, "pids", server+".pid"), fmt.Appendf(nil, "%d %d\n", pid, st), 0o644)
}

// readPids returns the pid records of a project directory.
func readPids(dir string) ([]pidRec, error) {
	files, err := filepath.Glob(filepath.Join(dir, "pids", "*.pid"))
	if err != nil {
		return nil, err
	}
	var out []pidRec
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		var r pidRec
		if _, err := fmt.Sscanf(string(b), "%d %d", &r.pid, &r.startTime); err != nil {
			return nil, fmt.Errorf("stack: bad pid file %s: %w", f, err)
		}
		r.server = strings.TrimSuffix(filepath.Base(f), ".pid")
		out = append(out, r)
	}
	return out, nil
}

// procStartTime returns field 22 (starttime, clock ticks since boot) of /proc/<pid>/stat,
// which together with the pid identifies a process across pid reuse.
func procStartTime(pid int) (uint64, error) {
	st, _, err := procStat(pid)
	return st, err
}

func procStat(pid int) (startTime uint64, state byte, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(b, ')') // comm may contain spaces and parentheses
	if i < 0 {
		return 0, 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	fs := strings.Fields(string(b[i+1:]))
	if len(fs) < 20 {
		return 0, 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	startTime, err = strconv.ParseUint(fs[19], 10, 64) // fs[0] is field 3 (state)
	return startTime, fs[0][0], err
}

// alive reports whether the recorded process still runs (same pid AND same start time, not a
// zombie).
func (r pidRec) alive() bool {
	st, state, err := procStat(r.pid)
	return err == nil && st == r.startTime && state != 'Z'
}

// ours reports whether the recorded process is alive and belongs to project dir: its command
// line names the directory or its working directory lies inside it (redis rewrites its process
// title, but runs in its data directory).
func (r pidRec) ours(dir string) bool {
	if !r.alive() {
		return false
	}
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", r.pid)); err == nil && bytes.Contains(cmdline, []byte(dir)) {
		return true
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", r.pid))
	return err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+string(os.PathSeparator)))
}

func writeEndpoints(dir string, ep Endpoints) error {
	b, err := json.MarshalIndent(ep, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, endpointsFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, endpointsFile))
}

// ReadEndpoints loads an endpoints.json written by a running stack (path to the file, or to
// its project directory).
func ReadEndpoints(path string) (Endpoints, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, endpointsFile)
	}
	var ep Endpoints
	b, err := os.ReadFile(path)
	if err != nil {
		return ep, fmt.Errorf("stack: read endpoints: %w", err)
	}
	if err := json.Unmarshal(b, &ep); err != nil {
		return ep, fmt.Errorf("stack: parse %s: %w", path, err)
	}
	return ep, nil
}

// tailFile returns the last n lines of a file (reading at most the last 1 MiB).
func tailFile(path string, n int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	const maxRead = 1 << 20
	off := max(fi.Size()-maxRead, 0)
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return "", err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return "", err
	}
	b = bytes.TrimRight(b, "\n")
	if n <= 0 {
		return "", nil
	}
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n"))), nil
}

func tailFileOr(path string, n int) string {
	s, err := tailFile(path, n)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if s == "" {
		return "(log is empty)"
	}
	return s
}

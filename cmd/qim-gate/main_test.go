package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/stack"
)

// The acceptance path for people: `qim-gate stack up --with-cql --json` prints endpoints within
// 180 s and leaves the servers running after it exits; `stack down --project` leaves no process
// and no directory behind.
func TestStackUpDownCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Redis, Kafka and Cassandra")
	}
	bin := filepath.Join(t.TempDir(), "qim-gate")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build qim-gate: %v\n%s", err, out)
	}
	root := t.TempDir()
	start := time.Now()
	up := exec.Command(bin, "stack", "up", "--with-cql", "--json", "--projects-dir", root)
	up.Stderr = os.Stderr
	out, err := up.Output()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("stack up: %v", err)
	}
	var ep stack.Endpoints
	if err := json.Unmarshal(out, &ep); err != nil {
		t.Fatalf("stack up printed no JSON endpoints: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = stack.DownProject(root, ep.Project) })
	t.Logf("stack up with CQL ready in %s: %+v", took.Round(time.Millisecond), ep)
	if took > 180*time.Second {
		t.Errorf("stack up took %s, want ≤ 180 s", took)
	}
	if ep.RedisCore == "" || ep.RedisMailbox == "" || len(ep.KafkaBrokers) == 0 || ep.CQL == "" {
		t.Fatalf("endpoints incomplete: %+v", ep)
	}
	pids := recordedPids(t, ep.Dir)
	if len(pids) != 4 {
		t.Fatalf("want 4 recorded servers, got %v", pids)
	}
	for server, pid := range pids {
		if !running(pid) {
			t.Fatalf("%s (pid %d) is not running after stack up exited", server, pid)
		}
	}
	down := exec.Command(bin, "stack", "down", "--project", ep.Project, "--projects-dir", root)
	if out, err := down.CombinedOutput(); err != nil {
		t.Fatalf("stack down: %v\n%s", err, out)
	}
	for server, pid := range pids {
		if running(pid) {
			t.Errorf("%s (pid %d) still running after stack down", server, pid)
		}
	}
	if _, err := os.Stat(ep.Dir); !os.IsNotExist(err) {
		t.Errorf("project directory %s still exists (err=%v)", ep.Dir, err)
	}
}

func recordedPids(t *testing.T, dir string) map[string]int {
	files, _ := filepath.Glob(filepath.Join(dir, "pids", "*.pid"))
	pids := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.Fields(string(b))[0])
		if err != nil {
			t.Fatalf("pid file %s: %v", f, err)
		}
		pids[strings.TrimSuffix(filepath.Base(f), ".pid")] = pid
	}
	return pids
}

// running reports whether pid exists and is not a zombie waiting to be reaped.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

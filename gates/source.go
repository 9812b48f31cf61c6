package gates

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// RunSource names what a run measured: the command line, the tree and the machine, for every
// report a person reads later (report.html, the chaos stability table). What cannot be read is
// said so, never left blank: a report without its commit cannot be compared with another.
type RunSource struct {
	Command string `json:"command"`
	Commit  string `json:"commit"`  // short hash, "with uncommitted changes" when the tree was dirty
	Machine string `json:"machine"` // cores, CPU model, memory
}

// DescribeRun reads the RunSource of a run of the harness in root.
func DescribeRun(ctx context.Context, root string) RunSource {
	src := RunSource{Command: strings.Join(append([]string{"qim-gate"}, os.Args[1:]...), " "),
		Commit: "an unknown tree", Machine: fmt.Sprintf("%d cores", runtime.NumCPU())}
	if sha, err := Git(ctx, root, "rev-parse", "--short=12", "HEAD"); err == nil {
		src.Commit = sha
		if st, err := Git(ctx, root, "status", "--porcelain", "--untracked-files=no"); err == nil && st != "" {
			src.Commit += " with uncommitted changes"
		}
	}
	if model := procField("/proc/cpuinfo", "model name"); model != "" {
		src.Machine += ", " + model
	}
	if mem := procField("/proc/meminfo", "MemTotal"); mem != "" {
		src.Machine += ", " + memGiB(mem) + " memory"
	}
	return src
}

// procField is the value of the first "key: value" line of a /proc file, "" when absent.
func procField(path, key string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// memGiB renders /proc/meminfo's "16384000 kB" as "15.6 GiB".
func memGiB(kb string) string {
	var n float64
	if _, err := fmt.Sscanf(kb, "%f kB", &n); err != nil {
		return kb
	}
	return fmt.Sprintf("%.1f GiB", n/(1<<20))
}

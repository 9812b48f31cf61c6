package chaos

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"time"
)

// runGoTest runs a GoTest cell: `go <args>` in the repository; its verdict is the exit status,
// and a run that matched no test fails (a renamed test must not turn the cell green).
func (m *matrix) runGoTest(ctx context.Context, c Cell) *CellResult {
	res := &CellResult{Name: c.Name, Title: c.Title, Class: c.class(), Quick: c.Quick, Pass: m.pass}
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", c.GoTest...)
	cmd.Dir = m.opts.Root
	// The tests share the matrix's stack instead of starting one per package (each uses Redis
	// databases of its own, never the cells' database 0).
	cmd.Env = append(os.Environ(), "QIM_IT_ENDPOINTS="+m.opts.Stack.Endpoints().Dir)
	out, err := cmd.CombinedOutput()
	text := string(out)
	ran := strings.Contains(text, "=== RUN") // GoTest runs with -v: a run that matched nothing prints none
	res.check("go "+strings.Join(c.GoTest, " "), err == nil && ran, "%s", tailLines(text, err, ran))
	res.DurationS = time.Since(start).Seconds()
	res.Passed = err == nil && ran
	res.FaultS, res.HealS, res.RecoveryAckMs, res.DrainMs = -1, -1, -1, -1
	return res
}

// tailLines summarises a go test run: the package lines, or the failure's last lines.
func tailLines(out string, err error, ran bool) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var keep []string
	for _, l := range lines {
		if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "FAIL") || strings.HasPrefix(l, "--- FAIL") {
			keep = append(keep, l)
		}
	}
	switch {
	case err != nil && len(lines) > 0:
		keep = append(keep, lines[max(0, len(lines)-15):]...)
	case !ran:
		keep = append(keep, "no test matched: the cell's tests were renamed or removed")
	}
	return strings.Join(keep, "\n")
}

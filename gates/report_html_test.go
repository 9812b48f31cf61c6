package gates

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestFormatNumber(t *testing.T) {
	for v, want := range map[float64]string{
		237.49444444444444:  "237.49",
		42750:               "42750",
		0.9999766081871345:  "0.99998",
		5.5311235350534504:  "5.53",
		2.34e-05:            "2.34e-05",
		0.26:                "0.26",
		-3:                  "-3",
		236.44999999999996:  "236.45",
		0.10432992584621861: "0.10433",
	} {
		if got := formatNumber(v); got != want {
			t.Errorf("formatNumber(%v) = %q, want %q", v, got, want)
		}
	}
}

// report.html names the commit and machine, links each gate's own HTML report relative to
// itself (every link resolves to a file), and rounds its numbers.
func TestReportHTMLLinksAndSource(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"perf-loadgen.html", "chaos/chaos.html"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte("<html></html>"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum := Summary{Passed: true, reportDir: dir, FinishedAt: time.Unix(0, 0),
		Source: RunSource{Command: "qim-gate run --full", Commit: "0123456789ab", Machine: "2 cores, AMD EPYC"},
		Results: []*Result{
			{Gate: "perf", Passed: true, Metrics: map[string]float64{"achieved_send_rate": 237.49444444444444},
				Artifacts: []string{filepath.Join(dir, "perf-loadgen.json"), filepath.Join(dir, "perf-loadgen.html")}},
			{Gate: "chaos", Passed: true, Artifacts: []string{filepath.Join("chaos", "chaos.html"), filepath.Join("chaos", "chaos.json")}},
		}}
	path := filepath.Join(dir, "report.html")
	if err := writeHTML(path, sum); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{"0123456789ab", "2 cores, AMD EPYC", "qim-gate run --full", ">237.49<"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	links := regexp.MustCompile(`href="([^"#][^"]*)"`).FindAllStringSubmatch(page, -1)
	if len(links) < 2 {
		t.Fatalf("report.html links %d gate reports, want perf's and chaos's: %v", len(links), links)
	}
	for _, l := range links {
		if _, err := os.Stat(filepath.Join(dir, l[1])); err != nil {
			t.Errorf("link %q does not resolve: %v", l[1], err)
		}
	}
	if strings.Contains(page, "237.4944") || strings.Contains(page, "map[") {
		t.Error("report.html shows unrounded numbers or Go map formatting")
	}
}

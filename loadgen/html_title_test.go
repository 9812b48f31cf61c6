package loadgen

import (
	"bytes"
	"encoding/xml"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// laneReport is a perf-gate run: 250 msg/s asked on 400 connections, 5 % of them on the SDK
// lane, so Run gives the frame-level connections 237.5 msg/s (the numbers of the release run).
func laneReport(t *testing.T) *Report {
	t.Helper()
	cfg := Config{Rate: 250, Connections: 400, SDKClientsPercent: 5}
	lane := cfg.sdkClients()
	frame := cfg.Connections - lane
	frameRate := cfg.Rate * float64(frame) / float64(cfg.Connections) // as Run computes it
	rep := goodReport()
	rep.Label = "perf 250 msg/s for 3m0s"
	rep.TargetRate, rep.Config.Rate, rep.Config.Connections = frameRate, frameRate, frame
	rep.Config.SDKClientsPercent = cfg.SDKClientsPercent
	rep.SDKLane = LaneReport{Enabled: true, Available: true, Clients: lane, Passed: true}
	return rep
}

// pageParts is the page's <title>, its <h1> and the value of its "target rate" row, as text.
func pageParts(t *testing.T, page []byte) (title, h1, target string) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(page))
	var open []string
	var th string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return title, h1, target
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			open = append(open, el.Name.Local)
		case xml.EndElement:
			open = open[:len(open)-1]
		case xml.CharData:
			switch {
			case len(open) == 0:
			case open[len(open)-1] == "title" && !inside(open, "svg"):
				title += string(el)
			case inside(open, "h1"):
				h1 += string(el)
			case open[len(open)-1] == "th":
				th = string(el)
			case open[len(open)-1] == "td" && th == "target rate":
				target += string(el)
			}
		}
	}
}

func inside(open []string, name string) bool {
	for _, o := range open {
		if o == name {
			return true
		}
	}
	return false
}

var firstRate = regexp.MustCompile(`(\d+(?:\.\d+)?) msg/s`)

// statedRate is the first rate a text states (-1: none).
func statedRate(text string) float64 {
	m := firstRate.FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return -1
	}
	return v
}

// TestHTMLTitleStatesTheTargetRowsRate: the title and the "target rate" row state the same
// rate, the one the arrival check judges (TargetRate); when the SDK lane took a share, both say
// what was requested and where the rest went.
func TestHTMLTitleStatesTheTargetRowsRate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rep    *Report
		rate   float64
		detail string
	}{
		{"SDK lane", laneReport(t), 237.5, "(250 requested; the other 12.5 msg/s on the SDK lane, 20 of 400 connections"},
		{"frame-level only", goodReport(), 500, ""},
	} {
		title, h1, target := pageParts(t, RenderHTML(tc.rep))
		for part, text := range map[string]string{"<title>": title, "<h1>": h1, "target rate row": target} {
			if got := statedRate(text); got != tc.rate {
				t.Errorf("%s: %s %q states %v msg/s, want %v", tc.name, part, text, got, tc.rate)
			}
			if !strings.Contains(text, tc.detail) {
				t.Errorf("%s: %s %q does not say %q", tc.name, part, text, tc.detail)
			}
		}
	}
}

// TestHTMLRequestedRateUndoesRunsScaling: the rate the title says was requested is the one Run was
// given, recovered from the report's frame-level numbers.
func TestHTMLRequestedRateUndoesRunsScaling(t *testing.T) {
	if got, scaled := requestedRate(laneReport(t)); !scaled || got != 250 {
		t.Errorf("requested %v (scaled %v), want 250", got, scaled)
	}
	rep := laneReport(t)
	rep.SDKLane.Available = false // asked for but not wired: Run scaled nothing
	if got, scaled := requestedRate(rep); scaled || got != rep.TargetRate {
		t.Errorf("lane not available: requested %v (scaled %v), want the target %v", got, scaled, rep.TargetRate)
	}
}

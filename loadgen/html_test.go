package loadgen

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// TestRenderHTML: the page is well-formed (parsed as strict XML: every tag closed, every
// attribute quoted, every entity known), self-contained (no script, no external resource) and
// holds the plots: rates, one latency-over-time plot per segment, the HDR percentile plot.
func TestRenderHTML(t *testing.T) {
	rep := goodReport()
	rep.Label = `<b>"quoted" & escaped</b>`
	rep.Errors = []string{"loadgen: connection 3 lost: <EOF>"}
	rep.ErrorCount = 1
	page := RenderHTML(rep)

	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict = true
	svgs, polylines, titles := 0, 0, map[string]bool{}
	var inTitle bool
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("page is not well-formed: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			switch el.Name.Local {
			case "script", "link", "img", "iframe", "object":
				t.Errorf("page is not self-contained: <%s>", el.Name.Local)
			case "svg":
				svgs++
			case "polyline":
				polylines++
			case "title":
				inTitle = true
			}
			for _, a := range el.Attr {
				if a.Name.Local == "src" || a.Name.Local == "href" {
					t.Errorf("external reference %s=%q", a.Name.Local, a.Value)
				}
			}
		case xml.CharData:
			if inTitle {
				titles[string(el)] = true
			}
		case xml.EndElement:
			inTitle = false
		}
	}
	if want := 1 + int(numSegments) + 1; svgs != want {
		t.Errorf("%d plots, want %d (rates, %d segments over time, percentiles)", svgs, want, numSegments)
	}
	if polylines < 3*int(numSegments) {
		t.Errorf("only %d lines drawn", polylines)
	}
	for _, want := range []string{"latency by percentile", "send_ack latency", "end_to_end latency", "ping_rtt latency",
		"generator_lag latency", "send_push latency", "send, commit (ACK) and delivery rate per window"} {
		if !titles[want] {
			t.Errorf("no plot titled %q (titles %v)", want, titles)
		}
	}
	s := string(page)
	for _, bad := range []string{"http://", "https://", "<b>\"quoted\""} {
		if strings.Contains(s, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	for _, want := range []string{"PASSED", "99.9%", "arrival rate", "kafka", "&lt;EOF&gt;"} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestRenderHTMLEmpty: a run that produced nothing still renders a well-formed page that says
// FAILED (no NaN or Inf coordinates, no panic).
func TestRenderHTMLEmpty(t *testing.T) {
	rep := &Report{Segments: map[string]SegmentSummary{}}
	rep.Verdicts = Evaluate(rep, Thresholds{})
	page := RenderHTML(rep)
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict = true
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("empty page is not well-formed: %v", err)
		}
	}
	if s := string(page); !strings.Contains(s, "FAILED") || strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
		t.Fatalf("empty page: FAILED missing or bad numbers:\n%s", s)
	}
}

func TestPercentLabel(t *testing.T) {
	for d, want := range []string{"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"} {
		if got := percentLabel(float64(d)); got != want {
			t.Errorf("percentLabel(%d) = %q, want %q", d, got, want)
		}
	}
}

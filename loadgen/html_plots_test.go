package loadgen

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// svgEl is one element inside a plot, with its attributes and its own text.
type svgEl struct {
	name string
	attr map[string]string
	text string
}

// svgDoc is one <svg> of a page: its own attributes, its <title> and its elements in order.
type svgDoc struct {
	attr  map[string]string
	title string
	els   []svgEl
}

// parseSVGs reads every <svg> of an XML-well-formed page or fragment.
func parseSVGs(t *testing.T, page []byte) []svgDoc {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict = true
	var docs []svgDoc
	var cur *svgEl
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return docs
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range el.Attr {
				attr[a.Name.Local] = a.Value
			}
			if el.Name.Local == "svg" {
				docs = append(docs, svgDoc{attr: attr})
				continue
			}
			if n := len(docs); n > 0 {
				docs[n-1].els = append(docs[n-1].els, svgEl{name: el.Name.Local, attr: attr})
				cur = &docs[n-1].els[len(docs[n-1].els)-1]
			}
		case xml.CharData:
			if cur != nil {
				cur.text += string(el)
			}
		case xml.EndElement:
			if cur != nil && cur.name == "title" {
				docs[len(docs)-1].title = cur.text
			}
			cur = nil
		}
	}
}

// stroke is what tells a line apart from another one: colour, width and dash.
type stroke struct{ color, width, dash string }

func strokeOf(e svgEl) stroke {
	return stroke{e.attr["stroke"], e.attr["stroke-width"], e.attr["stroke-dasharray"]}
}

type legendEntry struct {
	name string
	stroke
}

// legend is the plot's legend: a sample line right of the plot frame followed by its name.
func (d svgDoc) legend(t *testing.T) []legendEntry {
	t.Helper()
	right := -1.0
	for _, e := range d.els {
		if e.name == "rect" {
			x, _ := strconv.ParseFloat(e.attr["x"], 64)
			w, _ := strconv.ParseFloat(e.attr["width"], 64)
			right = x + w
			break
		}
	}
	if right < 0 {
		t.Fatalf("plot %q has no frame", d.title)
	}
	var out []legendEntry
	for i, e := range d.els[:len(d.els)-1] {
		x1, _ := strconv.ParseFloat(e.attr["x1"], 64)
		if next := d.els[i+1]; e.name == "line" && next.name == "text" && x1 > right {
			out = append(out, legendEntry{name: next.text, stroke: strokeOf(e)})
		}
	}
	return out
}

// TestHTMLEverySeriesHasAColourAndALegendEntry: in every plot each drawn line has a legend entry
// whose sample is drawn like it, every entry has a colour of its own, and the percentile plot
// names every segment.
func TestHTMLEverySeriesHasAColourAndALegendEntry(t *testing.T) {
	for _, d := range parseSVGs(t, RenderHTML(goodReport())) {
		entries, styles, colors := d.legend(t), map[stroke]string{}, map[string]string{}
		if len(entries) == 0 {
			t.Errorf("plot %q has no legend", d.title)
		}
		for _, le := range entries {
			if le.color == "" || le.color == "none" {
				t.Errorf("plot %q: legend entry %q has no colour", d.title, le.name)
			}
			if other, dup := colors[le.color]; dup {
				t.Errorf("plot %q: %q and %q share colour %q", d.title, other, le.name, le.color)
			}
			styles[le.stroke], colors[le.color] = le.name, le.name
		}
		for _, e := range d.els {
			switch {
			case e.name == "polyline" && styles[strokeOf(e)] == "":
				t.Errorf("plot %q: a line drawn as %+v has no legend entry", d.title, strokeOf(e))
			case e.name == "circle" && e.attr["fill"] == "":
				t.Errorf("plot %q: a point has no colour", d.title)
			}
		}
		if d.title == "latency by percentile" {
			for s := range numSegments {
				if !legendNames(entries)[s.String()] {
					t.Errorf("percentile plot: no legend entry for %s", s)
				}
			}
		}
	}
}

func legendNames(es []legendEntry) map[string]bool {
	out := map[string]bool{}
	for _, e := range es {
		out[e.name] = true
	}
	return out
}

// TestHTMLSegmentColorsAreDistinct: the percentile plot draws every segment at once, so each
// needs a colour of its own (a missing one is an invisible line; the array's length is checked
// at compile time).
func TestHTMLSegmentColorsAreDistinct(t *testing.T) {
	seen := map[string]Segment{}
	for s := range numSegments {
		c := segmentColors[s]
		if c == "" {
			t.Errorf("segment %s has no colour", s)
			continue
		}
		if o, dup := seen[c]; dup {
			t.Errorf("segments %s and %s share colour %s", o, s, c)
		}
		seen[c] = s
	}
}

// TestHTMLEqualRatesStayDistinguishable: in a healthy run sent, acked and delivered are the same
// numbers; their lines must then still differ in more than colour (width or dash), or they print
// as one line.
func TestHTMLEqualRatesStayDistinguishable(t *testing.T) {
	rep := goodReport()
	for i := range rep.Timeline {
		rep.Timeline[i].AckRate, rep.Timeline[i].DeliverRate = 500, 500
	}
	docs := parseSVGs(t, RenderHTML(rep))
	shapes := map[[2]string]string{}
	for _, e := range docs[0].els {
		if e.name != "polyline" || !strings.Contains(e.attr["points"], " ") {
			continue
		}
		shape := [2]string{e.attr["stroke-width"], e.attr["stroke-dasharray"]}
		if other, dup := shapes[shape]; dup && other == e.attr["points"] {
			t.Errorf("rate plot %q: two equal series drawn with the same width and dash %v", docs[0].title, shape)
		}
		shapes[shape] = e.attr["points"]
	}
	if len(shapes) < 3 {
		t.Errorf("rate plot: %d line shapes for sent, acked and delivered", len(shapes))
	}
}

// TestHTMLPlotsTakeThePageWidth: a plot is as wide as its container (width 100 % with a viewBox, so
// it scales), not a fixed width that wastes a wide page or overflows a narrow one.
func TestHTMLPlotsTakeThePageWidth(t *testing.T) {
	for _, d := range parseSVGs(t, RenderHTML(goodReport())) {
		if d.attr["width"] != "100%" || len(strings.Fields(d.attr["viewBox"])) != 4 {
			t.Errorf("plot %q: width %q, viewBox %q; want 100%% and a viewBox", d.title, d.attr["width"], d.attr["viewBox"])
		}
	}
}

var unrounded = regexp.MustCompile(`\d\.\d{4,}`)

// TestHTMLPageNumbersAreRounded: the page shows rounded numbers (the JSON keeps full precision);
// float tails such as 237.49444444444444 or an axis tick of 0.6000000000000001 must not show.
func TestHTMLPageNumbersAreRounded(t *testing.T) {
	odd := goodReport()
	odd.AchievedSendRate, odd.AckRate, odd.TargetRate = 237.49444444444444, 237.49444444444444, 237.5
	for i := range odd.Timeline {
		odd.Timeline[i].SendRate, odd.Timeline[i].DurS = 237.6035584459327, 4.999925118
	}
	tiny := goodReport()
	tiny.TargetRate = 0.3
	for i := range tiny.Timeline {
		tiny.Timeline[i].SendRate, tiny.Timeline[i].AckRate, tiny.Timeline[i].DeliverRate = 0.3, 0.1, 0.1
	}
	for name, rep := range map[string]*Report{"odd": odd, "tiny": tiny, "empty": {Segments: map[string]SegmentSummary{}}} {
		for _, n := range unrounded.FindAllString(pageText(t, RenderHTML(rep)), -1) {
			t.Errorf("%s report: page shows unrounded %s", name, n)
		}
	}
}

// pageText is the text a reader sees (attribute values, coordinates among them, excluded).
func pageText(t *testing.T, page []byte) string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(page))
	var b strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return b.String()
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		if cd, ok := tok.(xml.CharData); ok {
			fmt.Fprintf(&b, "%s\n", cd)
		}
	}
}

package chaos

import (
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/qim-dev/qim/loadgen"
)

// labelBox is the box a <text> covers, from its attributes. The width is a generous guess for
// sans-serif (0.6 em a character; the drawn glyphs of fault and heal are narrower), so boxes that
// do not overlap here do not overlap on screen.
type labelBox struct {
	text           string
	x0, x1, y0, y1 float64
}

func boxOf(t *testing.T, attr map[string]string, text string) labelBox {
	t.Helper()
	num := func(k string) float64 {
		v, err := strconv.ParseFloat(attr[k], 64)
		if err != nil {
			t.Fatalf("label %q: %s=%q: %v", text, k, attr[k], err)
		}
		return v
	}
	x, y, size := num("x"), num("y"), num("font-size")
	w := 0.6 * size * float64(len([]rune(text)))
	b := labelBox{text: text, x0: x, x1: x + w, y0: y - 0.8*size, y1: y + 0.2*size}
	switch attr["text-anchor"] {
	case "end":
		b.x0, b.x1 = x-w, x
	case "middle":
		b.x0, b.x1 = x-w/2, x+w/2
	}
	return b
}

func (b labelBox) overlaps(o labelBox) bool {
	return b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1
}

// timelineSVG is one rendered plot: its width, its viewBox width and its mark labels' boxes.
type timelineSVG struct {
	width, viewBox string
	viewW          float64
	labels         []labelBox
}

// parseTimeline reads the plots of a cell's timeline; mark labels are the texts naming a mark.
func parseTimeline(t *testing.T, frag string, marks map[string]bool) []timelineSVG {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader("<div>" + frag + "</div>"))
	d.Strict = true
	var out []timelineSVG
	var text map[string]string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("timeline is not well-formed: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range el.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch el.Name.Local {
			case "svg":
				vb := strings.Fields(attr["viewBox"])
				s := timelineSVG{width: attr["width"], viewBox: attr["viewBox"]}
				if len(vb) == 4 {
					s.viewW, _ = strconv.ParseFloat(vb[2], 64)
				}
				out = append(out, s)
			case "text":
				text = attr
			}
		case xml.CharData:
			if text != nil && marks[string(el)] && len(out) > 0 {
				out[len(out)-1].labels = append(out[len(out)-1].labels, boxOf(t, text, string(el)))
			}
		case xml.EndElement:
			text = nil
		}
	}
}

func cellTimeline(window, fault, heal float64) *CellResult {
	c := &CellResult{Name: "net-gateway-writer-half-open", Class: "half-open", FaultS: fault, HealS: heal, WindowS: window}
	for s := 1.0; s <= window+2; s++ {
		c.Timeline = append(c.Timeline, loadgen.Window{EndS: s, DurS: 1, SendRate: 100, AckRate: 100, DeliverRate: 100})
	}
	return c
}

// TestHTMLTimelineLabelsDoNotOverlap: the fault (named by its class, one of the longest) and heal labels of one plot never cover each other,
// also when the heal follows the fault within a fraction of a second (most cells of the release
// run: fault 7.85 s, heal 7.96 s) or both sit at the right edge, and they stay inside the plot.
func TestHTMLTimelineLabelsDoNotOverlap(t *testing.T) {
	for _, c := range []*CellResult{cellTimeline(30, 7.85, 7.96), cellTimeline(30, 29.6, 29.9),
		cellTimeline(105, 7.94, 78.05), cellTimeline(30, 0.2, 0.3)} {
		plots := parseTimeline(t, timeline(c, 100), map[string]bool{"half-open": true, "heal": true})
		if len(plots) != 3 {
			t.Fatalf("fault %.2f s, heal %.2f s: %d plots, want 3", c.FaultS, c.HealS, len(plots))
		}
		for _, p := range plots {
			if len(p.labels) != 2 {
				t.Fatalf("fault %.2f s, heal %.2f s: %d mark labels, want 2", c.FaultS, c.HealS, len(p.labels))
			}
			a, b := p.labels[0], p.labels[1]
			if a.overlaps(b) {
				t.Errorf("fault %.2f s, heal %.2f s: labels overlap: %+v and %+v", c.FaultS, c.HealS, a, b)
			}
			for _, l := range p.labels {
				if l.x0 < 0 || (p.viewW > 0 && l.x1 > p.viewW) {
					t.Errorf("fault %.2f s, heal %.2f s: label %+v leaves the plot (width %v)", c.FaultS, c.HealS, l, p.viewW)
				}
			}
		}
	}
}

// TestHTMLTimelineFitsThePage: every plot of a cell scales to the page's width (width 100 % of the
// body with a viewBox), so it never runs past a 1,400 px window nor leaves most of it empty.
func TestHTMLTimelineFitsThePage(t *testing.T) {
	for _, p := range parseTimeline(t, timeline(cellTimeline(30, 7.85, 7.96), 100), nil) {
		if p.width != "100%" || p.viewW <= 0 {
			t.Errorf("timeline plot width %q, viewBox %q: want width 100%% and a viewBox", p.width, p.viewBox)
		}
	}
}

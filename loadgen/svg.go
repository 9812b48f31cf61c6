package loadgen

import (
	"cmp"
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
)

// The plots are hand-written SVG so the HTML page is one self-contained file: no JavaScript, no
// stylesheet or font to fetch, readable offline and archivable as a CI artifact. A charting
// library was rejected for the same reason; the plots need axes, lines and labels only.

type series struct {
	name, color string
	dash        string    // stroke-dasharray; "" is a solid line
	width       float64   // stroke width; 0 is defaultStroke
	opacity     float64   // stroke opacity; 0 is opaque
	xs, ys      []float64 // NaN or a non-positive y on a log axis breaks the line
}

func (s series) strokeWidth() float64 {
	if s.width > 0 {
		return s.width
	}
	return defaultStroke
}

// strokeAttrs is the series' stroke as SVG attributes; the legend sample uses the same ones,
// so a line is recognisable by its width and dash even where colours look alike.
func (s series) strokeAttrs() string {
	a := fmt.Sprintf(`stroke="%s" stroke-width="%g"`, s.color, s.strokeWidth())
	if s.dash != "" {
		a += fmt.Sprintf(` stroke-dasharray="%s"`, s.dash)
	}
	if s.opacity > 0 {
		a += fmt.Sprintf(` stroke-opacity="%g"`, s.opacity)
	}
	return a
}

type axis struct {
	label    string
	min, max float64
	log      bool // values are plotted as log10(v); min/max are already log10 then
	ticks    []tick
}

type tick struct {
	at    float64 // axis coordinate (log10 on a log axis)
	label string
}

type plot struct {
	title  string
	x, y   axis
	series []series
	marks  []Mark // vertical lines at x positions (a fault, its heal)
}

// Mark is a labelled vertical line on the time axis of the timeline plots.
type Mark struct {
	AtS          float64 // seconds since the run started; ≤ 0 draws nothing
	Label, Color string
}

// The viewBox is about as wide as a page's text column on a laptop screen, so the plot, drawn at
// width 100 %, scales by little and its 12-unit text stays near 12 px wherever it is shown.
const (
	plotW, plotH             = 1200, 300
	padL, padR, padT, padB   = 64, 150, 28, 40
	innerW, innerH           = plotW - padL - padR, plotH - padT - padB
	fontSize                 = 12
	gridColor, axisTextColor = "#ddd", "#333"
	defaultStroke            = 1.5
	legendRow                = 18
)

var fontAttrs = fmt.Sprintf(`font-family="sans-serif" font-size="%d"`, fontSize)

func (a axis) coord(v float64) (float64, bool) {
	if a.log {
		if v <= 0 || math.IsNaN(v) {
			return 0, false
		}
		v = math.Log10(v)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

func (p *plot) px(x float64) float64 {
	return padL + (x-p.x.min)/(p.x.max-p.x.min)*innerW
}

func (p *plot) py(y float64) float64 {
	y = min(max(y, p.y.min), p.y.max)
	return padT + innerH - (y-p.y.min)/(p.y.max-p.y.min)*innerH
}

// render writes the plot as one <svg> element. Its width is the container's (100 %, height by
// the viewBox's aspect ratio): a fixed width either wastes a wide page or overflows a narrow one.
// That sizing is an inline style, not the page's stylesheet, because the chaos matrix embeds
// these plots in a page with a stylesheet of its own.
func (p *plot) render(b *strings.Builder) {
	fmt.Fprintf(b, `<svg class="plot" width="100%%" viewBox="0 0 %d %d" style="display:block;height:auto;max-width:100%%" role="img">`, plotW, plotH)
	fmt.Fprintf(b, `<title>%s</title>`, html.EscapeString(p.title))
	fmt.Fprintf(b, `<text x="%d" y="16" %s font-weight="bold" fill="%s">%s</text>`, padL, fontAttrs, axisTextColor, html.EscapeString(p.title))
	p.renderAxes(b)
	for _, s := range p.series {
		p.renderSeries(b, s)
	}
	p.renderMarks(b)
	p.renderLegend(b)
	b.WriteString(`</svg>`)
}

func (p *plot) renderAxes(b *strings.Builder) {
	for _, t := range p.y.ticks {
		y := p.py(t.at)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`, padL, y, padL+innerW, y, gridColor)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" %s text-anchor="end" fill="%s">%s</text>`, padL-4, y+4, fontAttrs, axisTextColor, html.EscapeString(t.label))
	}
	for _, t := range p.x.ticks {
		x := p.px(t.at)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`, x, padT, x, padT+innerH, gridColor)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" %s text-anchor="middle" fill="%s">%s</text>`, x, padT+innerH+15, fontAttrs, axisTextColor, html.EscapeString(t.label))
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>`, padL, padT, innerW, innerH)
	fmt.Fprintf(b, `<text x="%d" y="%d" %s text-anchor="middle" fill="%s">%s</text>`, padL+innerW/2, plotH-6, fontAttrs, axisTextColor, html.EscapeString(p.x.label))
	fmt.Fprintf(b, `<text x="14" y="%d" %s text-anchor="middle" fill="%s" transform="rotate(-90 14 %d)">%s</text>`,
		padT+innerH/2, fontAttrs, axisTextColor, padT+innerH/2, html.EscapeString(p.y.label))
}

// renderLegend names every series beside the plot with a sample of its own stroke.
func (p *plot) renderLegend(b *strings.Builder) {
	b.WriteString(`<g class="legend">`)
	for i, s := range p.series {
		ly := padT + 10 + legendRow*i
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" %s/>`, padL+innerW+10, ly, padL+innerW+36, ly, s.strokeAttrs())
		fmt.Fprintf(b, `<text x="%d" y="%d" %s fill="%s">%s</text>`, padL+innerW+42, ly+4, fontAttrs, axisTextColor, html.EscapeString(s.name))
	}
	b.WriteString(`</g>`)
}

// renderSeries draws one polyline per unbroken run of points (a lone point is a dot).
func (p *plot) renderSeries(b *strings.Builder, s series) {
	var run [][2]float64
	flush := func() {
		switch len(run) {
		case 0:
		case 1:
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%g" fill="%s"/>`, run[0][0], run[0][1], max(2, s.strokeWidth()/2), s.color)
		default:
			fmt.Fprintf(b, `<polyline fill="none" %s stroke-linejoin="round" points="`, s.strokeAttrs())
			for i, pt := range run {
				if i > 0 {
					b.WriteByte(' ')
				}
				fmt.Fprintf(b, "%.1f,%.1f", pt[0], pt[1])
			}
			b.WriteString(`"/>`)
		}
		run = run[:0]
	}
	for i := range s.xs {
		x, okx := p.x.coord(s.xs[i])
		y, oky := p.y.coord(s.ys[i])
		if !okx || !oky {
			flush()
			continue
		}
		run = append(run, [2]float64{p.px(x), p.py(y)})
	}
	flush()
}

// renderMarks draws each mark's line and its label where placeLabels put it. The white halo
// keeps a label readable where it crosses a series.
func (p *plot) renderMarks(b *strings.Builder) {
	for _, l := range p.placeLabels() {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="1.5" stroke-dasharray="4,3"/>`,
			l.lineX, padT, l.lineX, padT+innerH, l.mark.Color)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" %s text-anchor="%s" fill="%s" stroke="#fff" stroke-width="3" paint-order="stroke">%s</text>`,
			l.x, l.y, fontAttrs, l.anchor, l.mark.Color, html.EscapeString(l.mark.Label))
	}
}

// placedLabel is a mark's label position: baseline (x, y) with its anchor, and the box it covers.
type placedLabel struct {
	mark           Mark
	lineX, x, y    float64
	anchor         string
	x0, x1, y0, y1 float64
}

// labelWidth over-estimates a label's width in sans-serif (no font metrics without a browser):
// an over-estimate only costs a row, an under-estimate lets labels collide.
func labelWidth(s string) float64 { return 0.65 * fontSize * float64(len([]rune(s))) }

// placeLabels puts each mark's label right of its line (left of it near the right edge), in the
// top row where it overlaps no label placed before it; marks close in time (a fault healed
// within a second) get stacked rows instead of labels printed over each other.
func (p *plot) placeLabels() []placedLabel {
	marks := slices.Clone(p.marks)
	slices.SortStableFunc(marks, func(a, b Mark) int { return cmp.Compare(a.AtS, b.AtS) })
	var placed []placedLabel
	for _, m := range marks {
		if m.AtS <= 0 || m.AtS > p.x.max {
			continue
		}
		lx, w := p.px(m.AtS), labelWidth(m.Label)
		l := placedLabel{mark: m, lineX: lx, x: lx + 3, anchor: "start", x0: lx + 3, x1: lx + 3 + w}
		if l.x1 > padL+innerW {
			l.x, l.anchor, l.x0, l.x1 = lx-3, "end", lx-3-w, lx-3
		}
		for row := 0; ; row++ {
			l.y = float64(padT + 14 + (fontSize+4)*row)
			l.y0, l.y1 = l.y-fontSize, l.y+3 // ascent above the baseline, descent below it
			if !slices.ContainsFunc(placed, l.overlaps) {
				break
			}
		}
		placed = append(placed, l)
	}
	return placed
}

func (l placedLabel) overlaps(o placedLabel) bool {
	const gap = 2
	return l.x0 < o.x1+gap && o.x0 < l.x1+gap && l.y0 < o.y1 && o.y0 < l.y1
}

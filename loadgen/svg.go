package loadgen

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// The plots are hand-written SVG so the HTML page is one self-contained file: no JavaScript, no
// stylesheet or font to fetch, readable offline and archivable as a CI artifact. A charting
// library was rejected for the same reason; the plots need axes, lines and labels only.

type series struct {
	name, color string
	dashed      bool
	xs, ys      []float64 // NaN or a non-positive y on a log axis breaks the line
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

const (
	plotW, plotH             = 760, 260
	padL, padR, padT, padB   = 64, 150, 28, 40
	innerW, innerH           = plotW - padL - padR, plotH - padT - padB
	fontAttrs                = `font-family="sans-serif" font-size="11"`
	gridColor, axisTextColor = "#ddd", "#333"
)

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

// render writes the plot as one <svg> element.
func (p *plot) render(b *strings.Builder) {
	fmt.Fprintf(b, `<svg class="plot" width="%d" height="%d" viewBox="0 0 %d %d" role="img">`, plotW, plotH, plotW, plotH)
	fmt.Fprintf(b, `<title>%s</title>`, html.EscapeString(p.title))
	fmt.Fprintf(b, `<text x="%d" y="16" %s font-weight="bold" fill="%s">%s</text>`, padL, fontAttrs, axisTextColor, html.EscapeString(p.title))
	for _, t := range p.y.ticks {
		y := p.py(t.at)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`, padL, y, padL+innerW, y, gridColor)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" %s text-anchor="end" fill="%s">%s</text>`, padL-4, y+4, fontAttrs, axisTextColor, html.EscapeString(t.label))
	}
	for _, t := range p.x.ticks {
		x := p.px(t.at)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`, x, padT, x, padT+innerH, gridColor)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" %s text-anchor="middle" fill="%s">%s</text>`, x, padT+innerH+14, fontAttrs, axisTextColor, html.EscapeString(t.label))
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>`, padL, padT, innerW, innerH)
	fmt.Fprintf(b, `<text x="%d" y="%d" %s text-anchor="middle" fill="%s">%s</text>`, padL+innerW/2, plotH-6, fontAttrs, axisTextColor, html.EscapeString(p.x.label))
	fmt.Fprintf(b, `<text x="12" y="%d" %s text-anchor="middle" fill="%s" transform="rotate(-90 12 %d)">%s</text>`,
		padT+innerH/2, fontAttrs, axisTextColor, padT+innerH/2, html.EscapeString(p.y.label))
	for _, m := range p.marks {
		if m.AtS <= 0 || m.AtS > p.x.max {
			continue
		}
		x := p.px(m.AtS)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="1.5" stroke-dasharray="4,3"/>`, x, padT, x, padT+innerH, m.Color)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" %s fill="%s">%s</text>`, x+3, padT+12, fontAttrs, m.Color, html.EscapeString(m.Label))
	}
	for i, s := range p.series {
		p.renderSeries(b, s)
		ly := padT + 10 + 16*i
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="5,3"`
		}
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`, padL+innerW+10, ly, padL+innerW+30, ly, s.color, dash)
		fmt.Fprintf(b, `<text x="%d" y="%d" %s fill="%s">%s</text>`, padL+innerW+34, ly+4, fontAttrs, axisTextColor, html.EscapeString(s.name))
	}
	b.WriteString(`</svg>`)
}

// renderSeries draws one polyline per unbroken run of points (a lone point is a dot).
func (p *plot) renderSeries(b *strings.Builder, s series) {
	dash := ""
	if s.dashed {
		dash = ` stroke-dasharray="5,3"`
	}
	var run [][2]float64
	flush := func() {
		switch len(run) {
		case 0:
		case 1:
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2" fill="%s"/>`, run[0][0], run[0][1], s.color)
		default:
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="`, s.color, dash)
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

// linearAxis spans [0, hi] with 1-2-5 ticks; round extends it to the next tick (value axes),
// otherwise it ends exactly at hi (time axes, so the last window touches the frame).
func linearAxis(label string, hi float64, unit string, round bool) axis {
	if hi <= 0 || math.IsNaN(hi) {
		hi = 1
	}
	step := niceStep(hi / 5)
	top := hi
	if round {
		top = math.Ceil(hi/step) * step
	}
	a := axis{label: label, min: 0, max: top}
	for v := 0.0; v <= top+step*1e-9; v += step {
		a.ticks = append(a.ticks, tick{at: v, label: fmtNum(v) + unit})
	}
	return a
}

// logAxis spans the decades around [lo, hi] (both > 0) with ticks at 1, 2 and 5 × 10^k, at
// most five decades deep: sub-microsecond noise at the bottom would squash what matters.
func logAxis(label string, lo, hi float64, unit string) axis {
	if !(lo > 0 && hi > 0 && lo <= hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		lo, hi = 0.1, 1 // no data: an empty but well-formed axis
	}
	lo = max(lo, hi/1e4)
	dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dhi <= dlo {
		dhi = dlo + 1
	}
	a := axis{label: label, min: dlo, max: dhi, log: true}
	for d := dlo; d <= dhi; d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if lv := math.Log10(v); lv <= dhi+1e-9 {
				a.ticks = append(a.ticks, tick{at: lv, label: fmtNum(v) + unit})
			}
		}
	}
	return a
}

func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func fmtNum(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 1000:
		return fmt.Sprintf("%gk", math.Round(v/10)/100)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%g", math.Round(v*100)/100)
	default:
		return fmt.Sprintf("%g", v)
	}
}

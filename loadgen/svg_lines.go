package loadgen

import (
	"math"
	"strings"
)

// Line is one named series of LinesSVG, a y value per x of the plot (NaN leaves a gap).
type Line struct {
	Name string
	Ys   []float64
}

// linePalette colours LinesSVG's lines in order (ColorBrewer Dark2, then Set1), distinct enough
// for a dozen processes on one plot; the legend names each.
var linePalette = []string{"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d",
	"#666666", "#e41a1c", "#377eb8", "#4daf4a", "#984ea3", "#ff7f00", "#a65628"}

// LinesSVG draws lines over a shared x axis (xLabel, from 0) on a linear y axis from 0 (yUnit
// names its unit): the soak's footprint over time, a line per process or store.
func LinesSVG(title, xLabel, yUnit string, xs []float64, lines []Line) string {
	hiX, hiY := 0.0, 0.0
	for _, x := range xs {
		hiX = max(hiX, x)
	}
	for _, l := range lines {
		for _, y := range l.Ys {
			if !math.IsNaN(y) {
				hiY = max(hiY, y)
			}
		}
	}
	p := &plot{title: title, x: linearAxis(xLabel, hiX, "", false), y: linearAxis(yUnit, hiY*1.05, "", true)}
	for i, l := range lines {
		p.series = append(p.series, series{name: l.Name, color: linePalette[i%len(linePalette)], xs: xs, ys: l.Ys})
	}
	var b strings.Builder
	p.render(&b)
	return b.String()
}

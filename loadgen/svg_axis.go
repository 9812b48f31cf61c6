package loadgen

import (
	"math"
	"strconv"
)

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
	// i × step, not a running sum: adding 0.2 three times is 0.6000000000000001.
	for i := 0.0; i*step <= top+step*1e-9; i++ {
		a.ticks = append(a.ticks, tick{at: i * step, label: fmtNum(i*step) + unit})
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

// fmtNum is a tick label: three significant digits at most, thousands as k. Float arithmetic
// leaves tails (0.6000000000000001, 0.005000000000000001) that must not reach the page.
func fmtNum(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 1000:
		return sig3(v/1000) + "k"
	default:
		return sig3(v)
	}
}

// sig3 is v to three significant digits in plain decimal (150, 0.005, 1500; never 1.5e+03).
func sig3(v float64) string {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	if err != nil { // NaN or Inf: nothing to round
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

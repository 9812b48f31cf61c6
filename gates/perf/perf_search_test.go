package perf

import (
	"slices"
	"testing"
)

// The search on a machine whose boundary is known: the steps it runs and what it reports.
func TestRateSearch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		start    float64
		boundary float64 // rates at or below it pass; 0: nothing passes
		steps    []float64
		best     float64
	}{
		{"climbs then bisects to 10 %", 100, 2000, []float64{100, 200, 400, 800, 1600, 3200, 2260, 1900, 2070}, 1900},
		{"boundary between the first rungs", 100, 250, []float64{100, 200, 400, 283, 238, 260}, 238},
		{"the first step fails: halves down", 100, 30, []float64{100, 50, 25, 35.4, 29.7, 32.4}, 29.7},
		{"nothing passes: stops at the floor", 100, 0, []float64{100, 50, 25, 12.5}, 0},
		{"a group start", 0.2, 6, []float64{0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 4.53, 5.38, 5.87}, 5.87},
		{"never fails: bounded steps", 100, 1e12, []float64{100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 102000, 204000, 408000, 816000}, 816000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRateSearch(tc.start)
			var ran []float64
			best := 0.0
			for {
				rate, more := s.next()
				if !more {
					break
				}
				if slices.Contains(ran, rate) {
					t.Fatalf("rate %v proposed twice (ran %v)", rate, ran)
				}
				ran = append(ran, rate)
				ok := rate <= tc.boundary
				if ok {
					best = max(best, rate)
				}
				s.record(rate, ok)
			}
			if !slices.Equal(ran, tc.steps) || best != tc.best {
				t.Fatalf("ran %v best %v, want %v best %v", ran, best, tc.steps, tc.best)
			}
			if tc.boundary > 0 && tc.best > 0 && tc.best < tc.boundary && tc.boundary/tc.best > 1.1 && len(ran) < findMaxSteps {
				t.Fatalf("reported %v for a boundary at %v: not within 10 %%", tc.best, tc.boundary)
			}
		})
	}
}

package commitlog

import (
	"errors"
	"testing"
)

// TestValidateStart pins the start rule: a committed position must lie in [low, high]; without
// one, only a log that still starts at 0 may be read from the beginning.
func TestValidateStart(t *testing.T) {
	tests := []struct {
		name         string
		committed    int64
		hasCommitted bool
		b            Bounds
		want         int64
		wantRange    bool // *OffsetOutOfRangeError
		wantErr      bool // any error
	}{
		{"fresh empty log", 0, false, Bounds{0, 0}, 0, false, false},
		{"fresh log with records", 0, false, Bounds{0, 10}, 0, false, false},
		{"no commit, log trimmed", 0, false, Bounds{5, 10}, -1, true, true},
		{"committed at low", 5, true, Bounds{5, 10}, 5, false, false},
		{"committed inside", 7, true, Bounds{5, 10}, 7, false, false},
		{"committed at high (caught up)", 10, true, Bounds{5, 10}, 10, false, false},
		{"committed below low (trimmed unprocessed)", 4, true, Bounds{5, 10}, -1, true, true},
		{"committed above high (log shorter)", 11, true, Bounds{5, 10}, -1, true, true},
		{"committed zero on untrimmed log", 0, true, Bounds{0, 3}, 0, false, false},
		{"committed on empty recreated topic", 3, true, Bounds{0, 0}, -1, true, true},
		{"negative low", 0, true, Bounds{-1, 3}, -1, false, true},
		{"high below low", 0, false, Bounds{4, 3}, -1, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ValidateStart(tc.committed, tc.hasCommitted, tc.b)
			var oor *OffsetOutOfRangeError
			if isRange := errors.As(err, &oor); isRange != tc.wantRange {
				t.Fatalf("err = %v, want OffsetOutOfRangeError: %v", err, tc.wantRange)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("start = %d, want %d", got, tc.want)
			}
			if oor != nil && (oor.HasCommitted != tc.hasCommitted || oor.Low != tc.b.Low || oor.High != tc.b.High) {
				t.Fatalf("error data %+v does not carry the inputs", oor)
			}
		})
	}
}

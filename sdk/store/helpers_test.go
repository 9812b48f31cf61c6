package store

import (
	"context"
	"testing"
)

// openTest opens a fresh file store for the test (the production path; there is no in-memory
// store). storetest.Open does the same for other packages; it cannot be used here without an
// import cycle.
func openTest(tb testing.TB, id Identity) *Store {
	tb.Helper()
	path, err := Path(tb.TempDir(), id)
	if err != nil {
		tb.Fatalf("store: %v", err)
	}
	s, err := Open(context.Background(), path, id)
	if err != nil {
		tb.Fatalf("store: open test store: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

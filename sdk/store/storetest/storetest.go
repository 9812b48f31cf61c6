// Package storetest opens SDK stores for tests. It exists so that the store package itself never
// imports testing: production code has no in-memory or throw-away store to reach by accident.
package storetest

import (
	"context"
	"os"
	"testing"

	"github.com/qim-dev/qim/sdk/store"
)

// Open opens a fresh file store for id in a directory removed when the test ends. The directory
// is on /dev/shm when that is writable (synchronous=FULL then costs no disk flush, which keeps
// busy CI machines fast) and under the test's temporary directory otherwise. The code path is the
// production one: same DSN, same schema, same durability settings.
func Open(tb testing.TB, id store.Identity) *store.Store {
	tb.Helper()
	dir := scratchDir(tb)
	path, err := store.Path(dir, id)
	if err != nil {
		tb.Fatalf("storetest: %v", err)
	}
	s, err := store.Open(context.Background(), path, id)
	if err != nil {
		tb.Fatalf("storetest: open %s: %v", path, err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func scratchDir(tb testing.TB) string {
	if dir, err := os.MkdirTemp("/dev/shm", "qim-storetest-"); err == nil {
		tb.Cleanup(func() { _ = os.RemoveAll(dir) })
		return dir
	}
	return tb.TempDir()
}

package cqlstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/gates/stack"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m, stack.WithCQL(true))) }

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// freshKeyspace names a keyspace no other test uses (each test migrates its own).
func freshKeyspace(t testing.TB) Config {
	t.Helper()
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return Config{Hosts: []string{itest.Endpoints(t).CQL}, Keyspace: "qim_test_" + hex.EncodeToString(b)}
}

// migrated opens a fresh keyspace migrated to the current schema.
func migrated(t testing.TB) *Store {
	t.Helper()
	cfg := freshKeyspace(t)
	if _, err := Migrate(testCtx(t), cfg, MigrateOptions{ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	st, err := Open(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

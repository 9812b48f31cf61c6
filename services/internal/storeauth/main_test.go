package storeauth

import (
	"os"
	"testing"

	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/gates/stack"
)

// The integration test needs a stack whose every store demands TLS and credentials (the unit
// tests run alone with -short). It lives here, not in gates/stack, because only packages under
// services/ may import this one.
func TestMain(m *testing.M) {
	os.Exit(itest.Main(m, stack.WithCQL(true), stack.WithSecureStores(true), stack.WithDispatchShards(4)))
}

package writer

import (
	"os"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/rpcauth"
)

// The writer's tests run the real internal RPC boundary: the writer serves mTLS, the test
// clients call as the gateway (Writer) or as qimctl's admin (GroupAdmin).
var (
	certsOnce sync.Once
	certs     *rpcauth.DevSet
	certsErr  error
)

func testCerts(t testing.TB) *rpcauth.DevSet {
	t.Helper()
	certsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "qim-writer-certs-")
		if err != nil {
			certsErr = err
			return
		}
		certs, certsErr = rpcauth.WriteDevSet(dir, rpcauth.DevIdentities(1))
	})
	if certsErr != nil {
		t.Fatal(certsErr)
	}
	return certs
}

// writerRPC is the writer's side of the boundary in tests.
func writerRPC(t testing.TB) rpcauth.Config {
	set := testCerts(t)
	c := set.Certs["writer"]
	return rpcauth.Config{CAFile: set.CA, CertFile: c.CertFile, KeyFile: c.KeyFile, Peers: set.Peers}
}

// dialAs is the credential of the named identity calling the writer.
func dialAs(t testing.TB, name string) grpc.DialOption {
	t.Helper()
	set := testCerts(t)
	c := set.Certs[name]
	tr, err := rpcauth.LoadClient(set.CA, c.CertFile, c.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return tr.DialOption(contract.RPCServiceWriter)
}

// removeTestCerts runs after the package's tests.
func removeTestCerts() {
	if certs != nil {
		os.RemoveAll(certs.Dir)
	}
}

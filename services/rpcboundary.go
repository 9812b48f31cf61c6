package services

import (
	"fmt"

	"google.golang.org/grpc"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/rpcauth"
)

// DevCerts is a development certificate set for the internal RPC boundary (ADR-0025): a CA,
// one leaf per identity and the QIM_RPC_PEERS whitelist. `qimctl certs dev` and the harness's
// deployments write one; production brings its own CA.
type DevCerts = rpcauth.DevSet

// DevIdentity is one certificate of a DevCerts set.
type DevIdentity = rpcauth.Identity

// DevIdentities lists the identities of a deployment with n instances of each service, plus
// qimctl's admin; OneProcessIdentity is the certificate of a `qim all` process.
func DevIdentities(n int) []DevIdentity { return rpcauth.DevIdentities(n) }

// OneProcessIdentity is the identity of a `qim all` process named name.
func OneProcessIdentity(name string) DevIdentity { return rpcauth.OneProcessIdentity(name) }

// WriteDevCerts writes a fresh development set for ids under dir.
func WriteDevCerts(dir string, ids []DevIdentity) (*DevCerts, error) {
	return rpcauth.WriteDevSet(dir, ids)
}

// AdminDialOption is the credential qimctl (or a harness acting as the operator) calls the
// writer's GroupAdmin with: the admin certificate, the internal CA and the writer's server name.
// Without a certificate there is no call: GroupAdmin is refused to plaintext callers, loopback
// included.
func AdminDialOption(caFile, certFile, keyFile string) (grpc.DialOption, error) {
	t, err := rpcauth.LoadClient(caFile, certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("admin credentials: %w", err)
	}
	return t.DialOption(contract.RPCServiceWriter), nil
}

package svc

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/qim-dev/qim/services"
)

// The deployment runs the internal RPC boundary as production does: mTLS with a development CA
// written into the project directory, each service its own certificate, the harness's admin
// calls with qimctl's admin certificate (ADR-0025). A qim binary from before the boundary
// existed (an A/B baseline) gets none of it: it knows no internal RPC variable and speaks plaintext.

// rpcIdentity is the certificate a process of the Set holds ("" for services without internal
// RPC: the FanoutCoordinator and the HistoryArchiver).
func rpcIdentity(name string) string {
	switch name {
	case Writer, Mailbox, Session, Gateway, OneProcessName:
		return name
	}
	return ""
}

// writeCerts gives the Set its certificate set when the binary has the boundary.
func (s *Set) writeCerts() error {
	if !knowsRPCAuth(s.bin) {
		return nil
	}
	ids := append(services.DevIdentities(1), services.OneProcessIdentity(OneProcessName))
	certs, err := services.WriteDevCerts(filepath.Join(s.dir, "certs"), ids)
	if err != nil {
		return fmt.Errorf("svc: %w", err)
	}
	s.certs = certs
	return nil
}

// rpcEnv is the internal RPC environment of process name.
func (s *Set) rpcEnv(name string) []string {
	id := rpcIdentity(name)
	if s.certs == nil || id == "" {
		return nil
	}
	return s.certs.Env(id)
}

// MTLS reports whether the deployment's internal RPC runs mTLS (false only for an old binary).
func (s *Set) MTLS() bool { return s.certs != nil }

// AdminDialOption is how the harness calls the writer's GroupAdmin: with the admin certificate
// (plaintext only for a binary without the boundary, which served GroupAdmin in plaintext).
func (s *Set) AdminDialOption() (grpc.DialOption, error) {
	if s.certs == nil {
		return grpc.WithTransportCredentials(insecure.NewCredentials()), nil
	}
	c := s.certs.Certs["admin"]
	return services.AdminDialOption(s.certs.CA, c.CertFile, c.KeyFile)
}

var helpProbe sync.Map // "binary\x00service" → the service's --help text

// knows reports whether bin's service reads variable: its --help lists every variable it reads.
// The help is run once per binary and service.
func knows(bin, service, variable string) bool {
	key := bin + "\x00" + service
	if v, ok := helpProbe.Load(key); ok {
		return strings.Contains(v.(string), variable)
	}
	// Bounded: a test's stand-in binary may ignore --help and sleep.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, service, "--help")
	cmd.WaitDelay = time.Second
	out, _ := cmd.CombinedOutput()
	helpProbe.Store(key, string(out))
	return strings.Contains(string(out), variable)
}

// knowsRPCAuth reports whether bin's writer reads QIM_RPC_TLS_CA.
func knowsRPCAuth(bin string) bool { return knows(bin, Writer, "QIM_RPC_TLS_CA") }

package svc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// rpcIdentity is the certificate process name of the Set holds ("" for services without
// internal RPC: the FanoutCoordinator and the HistoryArchiver). With several instances the
// development set numbers every identity from 1 (services.DevIdentities), the single gateway
// included.
func (s *Set) rpcIdentity(name string) string {
	service, k := ServiceOf(name)
	switch service {
	case Writer, Mailbox, Session, Room, Gateway:
		if s.n > 1 {
			return fmt.Sprintf("%s-%d", service, k)
		}
		return name
	case Notify:
		return Notify // one instance, calling as the notify role (Session.Badge)
	case OneProcessName:
		return name
	}
	return ""
}

// writeCerts gives the Set its certificate set when the binary has the boundary.
func (s *Set) writeCerts() error {
	if !knowsRPCAuth(s.bin) {
		return nil
	}
	ids := append(services.DevIdentities(s.n), services.OneProcessIdentity(OneProcessName))
	certs, err := services.WriteDevCerts(filepath.Join(s.dir, "certs"), ids)
	if err != nil {
		return fmt.Errorf("svc: %w", err)
	}
	s.certs = certs
	return nil
}

// rpcEnv is the internal RPC environment of process name.
func (s *Set) rpcEnv(name string) []string {
	id := s.rpcIdentity(name)
	if s.certs == nil || id == "" {
		return nil
	}
	env := s.certs.Env(id)
	if !s.Notifies() { // a baseline binary refuses a whitelist naming a role it does not know
		for i, kv := range env {
			if peers, ok := strings.CutPrefix(kv, "QIM_RPC_PEERS="); ok {
				kept := slices.DeleteFunc(strings.Split(peers, ","), func(p string) bool { return strings.HasPrefix(p, "notify:") })
				env[i] = "QIM_RPC_PEERS=" + strings.Join(kept, ",")
			}
		}
	}
	return env
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

// knowsPresence reports whether bin's gateway publishes qim.presence (ADR-0027), so that its
// MailboxNodes push by the directory instead of to QIM_GATEWAY_PUSH_ADDR.
func knowsPresence(bin string) bool { return knows(bin, Gateway, "QIM_GATEWAY_PUSH_ADVERTISE") }

// knowsRPCAuth reports whether bin's writer reads QIM_RPC_TLS_CA.
func knowsRPCAuth(bin string) bool { return knows(bin, Writer, "QIM_RPC_TLS_CA") }

// RPCMode is the internal RPC mode the process name last said it serves ("mtls", "plaintext";
// "" when its log states none, as for the FanoutCoordinator): the services log it on start, so
// a gate shows the mode each process runs, not the one the harness meant to give it.
func (s *Set) RPCMode(name string) string {
	b, err := os.ReadFile(s.LogPath(name))
	if err != nil {
		return ""
	}
	const key = `"rpc":"`
	i := bytes.LastIndex(b, []byte(key))
	if i < 0 {
		return ""
	}
	rest := b[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// ServesRPC reports whether process name holds an internal RPC certificate in this deployment.
func (s *Set) ServesRPC(name string) bool { return s.certs != nil && s.rpcIdentity(name) != "" }

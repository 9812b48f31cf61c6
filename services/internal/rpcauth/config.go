package rpcauth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/qim-dev/qim/contract"
)

// Config is one process's side of the internal RPC boundary. Every service that serves or calls
// internal gRPC embeds it, so the variables are the same on each; docs/config.md lists them.
//
// Either the four mTLS fields are set (CAFile, CertFile, KeyFile, Peers) or PlaintextLoopback
// is, never both and never neither: an ambiguous zero is an error, and the error names the fix.
type Config struct {
	// CAFile verifies every peer: callers' client certificates and the servers a process dials.
	CAFile string `env:"QIM_RPC_TLS_CA" doc:"PEM file of the internal CA that signs every service's and qimctl's certificate (mTLS)"`
	// CertFile and KeyFile are this process's leaf: served on its gRPC listener (with the DNS SAN
	// <service>.qim.internal) and presented as the client certificate when it calls a service.
	CertFile string `env:"QIM_RPC_TLS_CERT" doc:"PEM certificate of this process, served on its gRPC listener and presented to the services it calls (mTLS)"`
	KeyFile  string `env:"QIM_RPC_TLS_KEY" doc:"PEM private key of QIM_RPC_TLS_CERT (mTLS)"`
	// Peers is the role whitelist: role:fingerprint, the fingerprint being the hex SHA-256 of a
	// caller's leaf certificate (DER). The same list can be given to every service; each honours
	// only the roles its methods accept. Listing a fingerprint, not trusting a name in the
	// certificate, means a leaked CA key alone does not grant a role.
	Peers []string `env:"QIM_RPC_PEERS" doc:"role whitelist for callers, comma-separated role:sha256-hex of each caller's leaf certificate (roles: gateway, mailbox, admin; qimctl certs dev prints it)"`
	// PlaintextLoopback is the development mode: no TLS, accepted only when every internal
	// address of the process is loopback. GroupAdmin stays refused (it needs an admin certificate).
	PlaintextLoopback bool `env:"QIM_RPC_PLAINTEXT_LOOPBACK" doc:"development only: plaintext internal gRPC, accepted only when every internal address is loopback (GroupAdmin stays refused: it needs admin mTLS)"`
}

// ErrConfig is wrapped by every configuration error of the boundary.
var ErrConfig = errors.New("rpcauth: invalid internal RPC security")

// Addr is one internal address of a process (a listener or a peer it dials), named by the
// variable that sets it so the error can say which one is not loopback.
type Addr struct{ Var, Addr string }

// MTLS reports whether the process runs the boundary with mTLS (after Validate: exactly one mode).
func (c Config) MTLS() bool { return c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" }

// Validate checks the mode against the process's internal addresses. It reads no file: Load does.
func (c Config) Validate(addrs ...Addr) error {
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"QIM_RPC_TLS_CA", c.CAFile}, {"QIM_RPC_TLS_CERT", c.CertFile}, {"QIM_RPC_TLS_KEY", c.KeyFile}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	switch {
	case c.MTLS() && len(missing) > 0:
		return fmt.Errorf("%w: mTLS is incomplete: %s not set", ErrConfig, strings.Join(missing, ", "))
	case c.MTLS() && c.PlaintextLoopback:
		return fmt.Errorf("%w: both mTLS (QIM_RPC_TLS_CA, QIM_RPC_TLS_CERT, QIM_RPC_TLS_KEY) and QIM_RPC_PLAINTEXT_LOOPBACK are set; choose one", ErrConfig)
	case !c.MTLS() && !c.PlaintextLoopback:
		return fmt.Errorf("%w: internal gRPC needs mTLS: set QIM_RPC_TLS_CA, QIM_RPC_TLS_CERT, QIM_RPC_TLS_KEY and QIM_RPC_PEERS "+
			"(`qimctl certs dev --out DIR` writes a development set), or QIM_RPC_PLAINTEXT_LOOPBACK=1 for development on loopback", ErrConfig)
	case c.PlaintextLoopback && len(c.Peers) > 0:
		return fmt.Errorf("%w: QIM_RPC_PEERS is set but QIM_RPC_PLAINTEXT_LOOPBACK has no identities to check it against", ErrConfig)
	}
	if c.PlaintextLoopback {
		for _, a := range addrs {
			if a.Addr != "" && !IsLoopback(a.Addr) {
				return fmt.Errorf("%w: %s=%q is not loopback and QIM_RPC_PLAINTEXT_LOOPBACK is loopback-only: configure mTLS (QIM_RPC_TLS_CA, QIM_RPC_TLS_CERT, QIM_RPC_TLS_KEY, QIM_RPC_PEERS)",
					ErrConfig, a.Var, a.Addr)
			}
		}
		return nil
	}
	if len(c.Peers) == 0 {
		return fmt.Errorf("%w: QIM_RPC_PEERS is empty: no caller could hold a role (`qimctl certs dev` prints the list)", ErrConfig)
	}
	_, err := parsePeers(c.Peers)
	return err
}

// Fingerprint is the SHA-256 of a certificate's DER bytes, the whitelist's key.
type Fingerprint [sha256.Size]byte

// FingerprintOf hashes a certificate's DER bytes.
func FingerprintOf(der []byte) Fingerprint { return sha256.Sum256(der) }

func (f Fingerprint) String() string { return hex.EncodeToString(f[:]) }

// roleSet holds the roles one fingerprint is listed under (`qim all` runs the gateway and the
// MailboxNode in one process, with one certificate for both).
type roleSet uint8

func roleBit(r contract.RPCRole) roleSet {
	for i, x := range contract.RPCRoles {
		if x == r {
			return 1 << i
		}
	}
	return 0
}

func (s roleSet) has(r contract.RPCRole) bool { return s&roleBit(r) != 0 }

func (s roleSet) names() []string {
	var out []string
	for _, r := range contract.RPCRoles {
		if s.has(r) {
			out = append(out, string(r))
		}
	}
	return out
}

func parsePeers(list []string) (map[Fingerprint]roleSet, error) {
	out := make(map[Fingerprint]roleSet, len(list))
	for _, p := range list {
		name, fp, ok := strings.Cut(strings.TrimSpace(p), ":")
		role, known := contract.RPCRole(""), false
		if ok {
			role, known = contract.ParseRPCRole(name)
		}
		if !known {
			return nil, fmt.Errorf("%w: QIM_RPC_PEERS entry %q: want role:sha256-hex with role one of %v", ErrConfig, p, contract.RPCRoles)
		}
		raw, err := hex.DecodeString(strings.TrimPrefix(fp, "sha256:"))
		if err != nil || len(raw) != sha256.Size {
			return nil, fmt.Errorf("%w: QIM_RPC_PEERS entry %q: the fingerprint is not 64 hex digits of SHA-256", ErrConfig, p)
		}
		var f Fingerprint
		copy(f[:], raw)
		out[f] |= roleBit(role)
	}
	return out, nil
}

// IsLoopback reports an address only this host can reach: localhost or a loopback IP.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

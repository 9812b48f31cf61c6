package rpcauth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/qim-dev/qim/contract"
)

// Transport is a loaded Config: what a process serves its listener with and dials its peers with.
// It is immutable once loaded; a rotated certificate takes a restart (ADR-0025).
type Transport struct {
	plaintext bool
	cert      tls.Certificate
	leaf      *x509.Certificate
	pool      *x509.CertPool
	peers     map[Fingerprint]roleSet
}

// ErrCertificate is wrapped by every refusal of a certificate file at start-up.
var ErrCertificate = errors.New("rpcauth: internal RPC certificate refused")

// Load reads and checks the files of a validated Config. serves names the service whose
// listener the certificate is served on ("" for a process that only dials): the certificate must
// carry that service's DNS SAN (contract.RPCServerName), or every caller's handshake would fail
// long after start-up instead of the start failing now.
func (c Config) Load(serves string) (*Transport, error) {
	if c.PlaintextLoopback {
		return &Transport{plaintext: true}, nil
	}
	peers, err := parsePeers(c.Peers)
	if err != nil {
		return nil, err
	}
	t, err := loadFiles(c.CAFile, c.CertFile, c.KeyFile)
	if err != nil {
		return nil, err
	}
	t.peers = peers
	if serves != "" {
		name := contract.RPCServerName(serves)
		if err := t.leaf.VerifyHostname(name); err != nil {
			return nil, fmt.Errorf("%w: %s (QIM_RPC_TLS_CERT) is served by the %s but has no DNS SAN %s: %v",
				ErrCertificate, c.CertFile, serves, name, err)
		}
	}
	return t, nil
}

// LoadClient is Load for a process that only dials and holds one role (qimctl as admin): it needs
// no whitelist because nobody calls it.
func LoadClient(caFile, certFile, keyFile string) (*Transport, error) {
	for _, f := range []struct{ flag, v string }{{"CA", caFile}, {"certificate", certFile}, {"key", keyFile}} {
		if f.v == "" {
			return nil, fmt.Errorf("%w: no %s file given", ErrCertificate, f.flag)
		}
	}
	return loadFiles(caFile, certFile, keyFile)
}

func loadFiles(caFile, certFile, keyFile string) (*Transport, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("%w: QIM_RPC_TLS_CA: %w", ErrCertificate, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%w: QIM_RPC_TLS_CA %s holds no PEM certificate", ErrCertificate, caFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: QIM_RPC_TLS_CERT/QIM_RPC_TLS_KEY: %w", ErrCertificate, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCertificate, certFile, err)
	}
	cert.Leaf = leaf
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	// Both usages: a service's one leaf is its server certificate and its client certificate.
	for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{u}}); err != nil {
			return nil, fmt.Errorf("%w: %s does not verify against QIM_RPC_TLS_CA %s: %w", ErrCertificate, certFile, caFile, err)
		}
	}
	return &Transport{cert: cert, leaf: leaf, pool: pool}, nil
}

// DialOption is the transport credential for calling service: TLS 1.3 with this process's
// certificate, the internal CA as the only root and SNI set to the service's name, which the
// server's certificate must carry.
func (t *Transport) DialOption(service string) grpc.DialOption {
	if t.plaintext {
		return grpc.WithTransportCredentials(insecure.NewCredentials())
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{t.cert},
		RootCAs:      t.pool,
		ServerName:   contract.RPCServerName(service),
	}))
}

func (t *Transport) serverTLS() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{t.cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    t.pool,
	}
}

// Mode names the boundary's mode for logs: "mtls" or "plaintext-loopback".
func (t *Transport) Mode() string {
	if t.plaintext {
		return "plaintext-loopback"
	}
	return "mtls"
}

package stack

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// SecureEndpoints is how clients authenticate to a stack started WithSecureStores: one CA signs
// every server's certificate (127.0.0.1, ::1, localhost), each store has a user, and each
// password sits in a file of its own (mode 0600) so that Endpoints, endpoints.json and the
// progress lines never carry a secret.
type SecureEndpoints struct {
	CAFile             string `json:"ca_file"` // PEM, the only CA clients should trust
	RedisUser          string `json:"redis_user"`
	RedisPasswordFile  string `json:"redis_password_file"`
	KafkaSASLMechanism string `json:"kafka_sasl_mechanism"` // SCRAM-SHA-512
	KafkaUser          string `json:"kafka_user"`
	KafkaPasswordFile  string `json:"kafka_password_file"`
	CQLUser            string `json:"cql_user"`
	CQLPasswordFile    string `json:"cql_password_file"`
}

// secureUser is the one user name of every store; the passwords differ per store.
const secureUser = "qim"

// serverTLS is where the servers' key material lives in the project dir.
type serverTLS struct {
	certFile     string // server certificate (PEM)
	keyFile      string // its unencrypted PKCS#8 key (PEM)
	keystoreFile string // key and certificate in one PEM file (Kafka, Cassandra)
}

func tlsFiles(dir string) serverTLS {
	d := filepath.Join(dir, "tls")
	return serverTLS{certFile: filepath.Join(d, "server.pem"), keyFile: filepath.Join(d, "server-key.pem"),
		keystoreFile: filepath.Join(d, "server-keystore.pem")}
}

// writeSecureMaterial makes a throwaway CA, a server certificate signed by it, and one random
// password per store, all under dir (tls/, secrets/). crypto/x509 rather than openssl: one less
// tool to install, and the key never passes through a command line.
func writeSecureMaterial(dir string) (*SecureEndpoints, error) {
	for _, sub := range []string{"tls", "secrets"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("stack: secure stores: %w", err)
		}
	}
	ca := filepath.Join(dir, "tls", "ca.pem")
	if err := writeCertificates(ca, tlsFiles(dir)); err != nil {
		return nil, fmt.Errorf("stack: secure stores: %w", err)
	}
	sec := &SecureEndpoints{CAFile: ca, RedisUser: secureUser, KafkaSASLMechanism: "SCRAM-SHA-512",
		KafkaUser: secureUser, CQLUser: secureUser}
	for _, p := range []struct {
		file *string
		name string
	}{{&sec.RedisPasswordFile, "redis"}, {&sec.KafkaPasswordFile, "kafka"}, {&sec.CQLPasswordFile, "cql"}} {
		*p.file = filepath.Join(dir, "secrets", p.name+".password")
		if err := os.WriteFile(*p.file, []byte(randomPassword()), 0o600); err != nil {
			return nil, fmt.Errorf("stack: secure stores: %w", err)
		}
	}
	return sec, nil
}

// randomPassword is 24 random bytes in hex: no character needs quoting in an ACL file, a JAAS
// line or a CQL string.
func randomPassword() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// writeCertificates writes the CA certificate to caFile and the server's certificate and key to
// srv. RSA 2048, because every server here reads it (OpenSSL in Redis, the JDK's PEM readers of
// Kafka and Cassandra); valid for a week, the stack lives minutes.
func writeCertificates(caFile string, srv serverTLS) error {
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "qim-it throwaway CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	files := []struct {
		path string
		body []byte
		mode os.FileMode
	}{
		{caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644},
		{srv.certFile, certPEM, 0o644},
		{srv.keyFile, keyPEM, 0o600},
		{srv.keystoreFile, append(append([]byte{}, keyPEM...), certPEM...), 0o600},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.body, f.mode); err != nil {
			return err
		}
	}
	return nil
}

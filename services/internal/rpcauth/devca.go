package rpcauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/qim-dev/qim/contract"
)

// Identity is one certificate of a development set: a name (the file stem), the services whose
// server names it carries (none for a client-only identity such as qimctl's admin; all five for
// a `qim all` process) and the roles its fingerprint is whitelisted under.
type Identity struct {
	Name     string
	Services []string
	Roles    []contract.RPCRole
}

// IsProcess reports whether the identity is a process of the deployment, which reads its
// certificate from the environment: it serves, or it calls with a role other than the
// operator's. The admin certificate is qimctl's, handed over as flags.
func (id Identity) IsProcess() bool {
	if len(id.Services) > 0 {
		return true
	}
	for _, r := range id.Roles {
		if r != contract.RPCRoleAdmin {
			return true
		}
	}
	return false
}

// DevIdentities is the set a deployment of n instances of each service needs: a writer, MailboxNode,
// RoomWriter, SessionProjection and gateway certificate per instance, one NotificationService
// and one admin for qimctl. Instance names
// are numbered from 1 when n > 1 (gateway-1, gateway-2, …).
func DevIdentities(n int) []Identity {
	var out []Identity
	for i := 1; i <= n; i++ {
		suffix := ""
		if n > 1 {
			suffix = fmt.Sprintf("-%d", i)
		}
		out = append(out,
			Identity{Name: "writer" + suffix, Services: []string{contract.RPCServiceWriter}},
			Identity{Name: "mailbox" + suffix, Services: []string{contract.RPCServiceMailbox}, Roles: []contract.RPCRole{contract.RPCRoleMailbox}},
			Identity{Name: "session" + suffix, Services: []string{contract.RPCServiceSession}},
			Identity{Name: "gateway" + suffix, Services: []string{contract.RPCServiceGatewayPush}, Roles: []contract.RPCRole{contract.RPCRoleGateway}},
			Identity{Name: "room" + suffix, Services: []string{contract.RPCServiceRoom}})
	}
	return append(out, Identity{Name: "admin", Roles: []contract.RPCRole{contract.RPCRoleAdmin}},
		Identity{Name: "notify", Roles: []contract.RPCRole{contract.RPCRoleNotify}})
}

// OneProcessIdentity is the certificate of a `qim all` process: it serves as all five services
// and calls as the gateway, the MailboxNode and the NotificationService.
func OneProcessIdentity(name string) Identity {
	return Identity{Name: name, Services: []string{contract.RPCServiceWriter, contract.RPCServiceMailbox,
		contract.RPCServiceSession, contract.RPCServiceRoom, contract.RPCServiceGatewayPush},
		Roles: []contract.RPCRole{contract.RPCRoleGateway, contract.RPCRoleMailbox, contract.RPCRoleNotify}}
}

// DevSet is a development certificate set written to Dir: ca.pem (and ca.key, so more
// certificates can be signed), <name>.pem and <name>.key per identity, and the whitelist.
type DevSet struct {
	Dir   string
	CA    string             // path of ca.pem
	Certs map[string]DevCert // by Identity.Name
	Peers []string           // QIM_RPC_PEERS entries, role:fingerprint
}

// DevCert is one written identity.
type DevCert struct {
	Identity
	CertFile, KeyFile string
	Fingerprint       Fingerprint
}

// Env is the internal RPC environment (CA, certificate, key, whitelist) of the process holding identity name.
func (d *DevSet) Env(name string) []string { return d.EnvAt(name, "") }

// EnvAt is Env with the files named where the set is mounted (a container's /certs, say): a
// set written on one host is read where it is mounted. An empty mount names them in Dir.
func (d *DevSet) EnvAt(name, mount string) []string {
	at := func(f string) string {
		if mount == "" {
			return f
		}
		return path.Join(mount, filepath.Base(f)) // every file of the set sits directly in Dir
	}
	c := d.Certs[name]
	return []string{"QIM_RPC_TLS_CA=" + at(d.CA), "QIM_RPC_TLS_CERT=" + at(c.CertFile), "QIM_RPC_TLS_KEY=" + at(c.KeyFile),
		"QIM_RPC_PEERS=" + strings.Join(d.Peers, ",")}
}

// devValidity is long enough for a demo left running, short enough that nobody mistakes the set
// for production's.
const devValidity = 90 * 24 * time.Hour

// WriteDevSet makes a fresh CA and one leaf per identity under dir (created 0700; keys 0600).
// It is for development and the harness: the CA key sits beside the certificates.
func WriteDevSet(dir string, ids []Identity) (*DevSet, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("rpcauth: dev certs: %w", err)
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("rpcauth: dev CA key: %w", err)
	}
	caTmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "qim development internal CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(devValidity), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, MaxPathLenZero: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("rpcauth: dev CA: %w", err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	set := &DevSet{Dir: dir, CA: filepath.Join(dir, "ca.pem"), Certs: map[string]DevCert{}}
	if err := writePair(dir, "ca", caDER, caKey); err != nil {
		return nil, err
	}
	for _, id := range ids {
		c, err := writeLeaf(dir, id, caCert, caKey, now)
		if err != nil {
			return nil, err
		}
		set.Certs[id.Name] = c
		for _, r := range id.Roles {
			set.Peers = append(set.Peers, string(r)+":"+c.Fingerprint.String())
		}
	}
	return set, nil
}

func writeLeaf(dir string, id Identity, ca *x509.Certificate, caKey *ecdsa.PrivateKey, now time.Time) (DevCert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return DevCert{}, fmt.Errorf("rpcauth: dev key %s: %w", id.Name, err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "qim " + id.Name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(devValidity), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	for _, s := range id.Services {
		tmpl.DNSNames = append(tmpl.DNSNames, contract.RPCServerName(s))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return DevCert{}, fmt.Errorf("rpcauth: dev certificate %s: %w", id.Name, err)
	}
	if err := writePair(dir, id.Name, der, key); err != nil {
		return DevCert{}, err
	}
	return DevCert{Identity: id, CertFile: filepath.Join(dir, id.Name+".pem"), KeyFile: filepath.Join(dir, id.Name+".key"),
		Fingerprint: FingerprintOf(der)}, nil
}

func writePair(dir, name string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("rpcauth: dev key %s: %w", name, err)
	}
	files := []struct {
		path  string
		block *pem.Block
		mode  os.FileMode
	}{
		{filepath.Join(dir, name+".pem"), &pem.Block{Type: "CERTIFICATE", Bytes: der}, 0o644},
		{filepath.Join(dir, name+".key"), &pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}, 0o600},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(f.block), f.mode); err != nil {
			return fmt.Errorf("rpcauth: dev certs: %w", err)
		}
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(fmt.Sprintf("rpcauth: crypto/rand failed: %v", err)) // the OS source does not fail
	}
	return n
}

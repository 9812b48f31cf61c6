package gateway

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

func TestWebSocketAuthPingAndKick(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	id := newIdentity(t, "browser")
	ws := dialWS(t, h.addrs.WS)
	if ok := ws.auth(id.token, 0); ok.GetUserId() != uint64(id.user) {
		t.Fatalf("AUTH_OK over WebSocket = %v", ok)
	}
	ws.ping()
	// The same session semantics hold across transports: a TCP login of the device evicts it.
	tcp := h.login(id)
	var k qimv1.Kicked
	ws.expect(contract.OpKicked, &k)
	if contract.KickReason(k.GetReason()) != contract.KickReplaced {
		t.Fatalf("KICKED reason %d", k.GetReason())
	}
	ws.expectClosed(3 * time.Second)
	tcp.ping()
}

func TestWebSocketRefusesForeignOriginAndOtherPaths(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, "ws://"+h.addrs.WS+wsPath, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign origin: err %v, resp %v; want 403", err, resp)
	}
	r, err := http.Get("http://" + h.addrs.WS + "/other")
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Body.Close()
	if r.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /other = %d, want 404", r.StatusCode)
	}
}

// selfSigned writes a certificate and key for 127.0.0.1 and returns their paths and a pool
// trusting the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "qim-gateway-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestTLS13AuthPing(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	h := startGateway(t, harnessOpts{mutate: func(c *Config) { c.TLSCertFile, c.TLSKeyFile = certFile, keyFile }})
	c := dialTLS(t, h.addrs.TCP, &tls.Config{RootCAs: pool, NextProtos: []string{alpnQIM}, MinVersion: tls.VersionTLS12})
	st := c.nc.(*tls.Conn).ConnectionState()
	if st.Version != tls.VersionTLS13 || st.NegotiatedProtocol != alpnQIM {
		t.Fatalf("TLS version %x ALPN %q, want TLS 1.3 and %q", st.Version, st.NegotiatedProtocol, alpnQIM)
	}
	c.auth(newIdentity(t, "d").token, 0)
	c.ping()
	// TLS 1.2 is refused.
	if _, err := tls.Dial("tcp", h.addrs.TCP, &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS12}); err == nil {
		t.Fatal("a TLS 1.2 handshake succeeded")
	}
}

func TestQimctlTokenAcceptedByGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/qimctl")
	}
	h := startGateway(t, harnessOpts{})
	bin := filepath.Join(t.TempDir(), "qimctl")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/qim-dev/qim/cmd/qimctl").CombinedOutput(); err != nil {
		t.Fatalf("build qimctl: %v\n%s", err, out)
	}
	id := newIdentity(t, "cli-device")
	tenant := id.tenant.String()
	cmd := exec.Command(bin, "token", "issue", "--user", strconv.FormatUint(uint64(id.user), 10), "--device", id.device,
		"--tenant", tenant, "--ttl", "10m")
	cmd.Env = append(os.Environ(), "QIM_TOKEN_SECRET="+testSecret)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("qimctl token issue: %v (%s)", err, stderr.String())
	}
	c := dialTCP(t, h.addrs.TCP)
	if ok := c.auth(strings.TrimSpace(string(out)), 0); ok.GetUserId() != uint64(id.user) {
		t.Fatalf("AUTH_OK for the qimctl token = %v", ok)
	}
}

package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/qim-dev/qim/services"
)

func devCerts(t *testing.T) *services.DevCerts {
	t.Helper()
	set, err := services.WriteDevCerts(t.TempDir(), services.DevIdentities(1))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// writerTLS is a writer's server side of the boundary, for a fake GroupAdmin: the writer's
// certificate, client certificates required from the set's CA.
func writerTLS(t *testing.T, set *services.DevCerts) *tls.Config {
	t.Helper()
	w := set.Certs["writer"]
	cert, err := tls.LoadX509KeyPair(w.CertFile, w.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(set.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
}

func TestCertsDevWritesEnvFilesAndRefusesToOverwrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	out, _, err := run(t, "certs", "dev", "--out", dir, "--instances", "2")
	if err != nil {
		t.Fatal(err)
	}
	env, err := os.ReadFile(filepath.Join(dir, "gateway-2.env"))
	if err != nil {
		t.Fatal(err)
	}
	peers := ""
	for _, l := range strings.Split(string(env), "\n") {
		if v, ok := strings.CutPrefix(l, "QIM_RPC_PEERS="); ok {
			peers = v
		}
	}
	// 2 gateways, 2 MailboxNodes, the admin and the NotificationService hold roles; writers and
	// sessions call nobody.
	if n := len(strings.Split(peers, ",")); n != 6 || !strings.Contains(out, "QIM_RPC_PEERS="+peers) ||
		!strings.Contains(string(env), "QIM_RPC_TLS_CERT="+filepath.Join(dir, "gateway-2.pem")) {
		t.Fatalf("gateway-2.env:\n%s\nstdout:\n%s", env, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "admin.env")); err == nil {
		t.Fatal("admin.env written: the admin is qimctl, not a service")
	}
	// Every certificate env file the compose deployment names must be written, the
	// NotificationService's too (it serves nothing but calls Session.Badge).
	compose, err := os.ReadFile(filepath.Join("..", "..", "compose.integration.yml"))
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`\.qim-compose/certs/([a-z0-9-]+)\.env`).FindAllStringSubmatch(string(compose), -1)
	if len(named) == 0 {
		t.Fatal("compose.integration.yml names no certificate env file")
	}
	for _, m := range named {
		if _, err := os.Stat(filepath.Join(dir, m[1]+".env")); err != nil {
			t.Errorf("compose.integration.yml needs %s.env: %v", m[1], err)
		}
	}
	if _, _, err := run(t, "certs", "dev", "--out", dir); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("second run: %v, want a refusal naming --force", err)
	}
	if _, _, err := run(t, "certs", "dev", "--out", dir, "--force"); err != nil {
		t.Fatal(err)
	}
}

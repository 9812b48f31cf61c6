package stack

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The throwaway CA signs a server certificate valid for every loopback name a client dials,
// the key and the passwords are readable by the owner only, and nothing the stack prints or
// saves (Endpoints, endpoints.json) holds a password.
func TestSecureMaterial(t *testing.T) {
	dir := t.TempDir()
	sec, err := writeSecureMaterial(dir)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := sec.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(tlsFiles(dir).certFile)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"127.0.0.1", "localhost", "::1"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: tc.RootCAs, DNSName: name}); err != nil {
			t.Errorf("server certificate for %s: %v", name, err)
		}
	}
	ep := Endpoints{Secure: sec}
	js, _ := json.Marshal(ep)
	seen := map[string]bool{}
	for _, f := range []string{sec.RedisPasswordFile, sec.KafkaPasswordFile, sec.CQLPasswordFile, tlsFiles(dir).keyFile, tlsFiles(dir).keystoreFile} {
		st, err := os.Stat(f)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, mode %v; want 0600", f, err, st.Mode())
		}
		if !strings.HasSuffix(f, ".password") {
			continue
		}
		pw, _ := ReadPassword(f)
		if len(pw) != 48 || seen[pw] || strings.Contains(string(js), pw) {
			t.Fatalf("%s: a password of %d chars, reused %v, or shown in the endpoints", f, len(pw), seen[pw])
		}
		seen[pw] = true
	}
}

// The secure server settings: Redis TLS only with the ACL file, Kafka's broker listener SASL_SSL
// with SCRAM-SHA-512 in the bootstrap metadata, Cassandra with PasswordAuthenticator and
// required client encryption; a plain stack gets none of it.
func TestSecureServerSettings(t *testing.T) {
	s := &processStack{cfg: newConfig(nil), dir: t.TempDir()}
	if args := s.redisListenArgs(ServerRedisCore, 7001); strings.Join(args, " ") != "--port 7001" {
		t.Fatalf("plain redis args %v", args)
	}
	if props, scram, _ := s.kafkaSecureProps(1, 2); len(props) != 0 || scram != nil || s.cassandraSecureYAML() != "" {
		t.Fatalf("plain stack gets secure settings: %v %v", props, scram)
	}
	sec, err := writeSecureMaterial(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	s.sec = sec
	if err := os.Mkdir(filepath.Join(s.dir, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := strings.Join(s.redisListenArgs(ServerRedisCore, 7001), " ")
	if !strings.HasPrefix(args, "--port 0 --tls-port 7001 ") || !strings.Contains(args, "--tls-auth-clients no --aclfile ") {
		t.Fatalf("secure redis args %s", args)
	}
	if err := s.writeRedisACL(ServerRedisCore); err != nil {
		t.Fatal(err)
	}
	acl, _ := os.ReadFile(redisACLFile(s.dir, ServerRedisCore))
	if !strings.HasPrefix(string(acl), "user default off\nuser qim on >") {
		t.Fatalf("ACL file starts %.30q", acl)
	}
	props, scram, err := s.kafkaSecureProps(9092, 9093)
	if err != nil {
		t.Fatal(err)
	}
	if props["listeners"] != "SASL_SSL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093" || props["ssl.keystore.type"] != "PEM" ||
		props["sasl.enabled.mechanisms"] != "SCRAM-SHA-512" || len(scram) != 2 || !strings.HasPrefix(scram[1], "SCRAM-SHA-512=[name=qim,password=") {
		t.Fatalf("kafka props %v, format args %d", props, len(scram))
	}
	if y := s.cassandraSecureYAML(); !strings.Contains(y, "authenticator: PasswordAuthenticator") || !strings.Contains(y, "optional: false") {
		t.Fatalf("cassandra yaml %s", y)
	}
}

func TestContainersRefuseSecureStores(t *testing.T) {
	err := NewContainers(WithSecureStores(true)).Up(context.Background())
	if err == nil || !strings.Contains(err.Error(), "process provider only") {
		t.Fatalf("Up = %v", err)
	}
}

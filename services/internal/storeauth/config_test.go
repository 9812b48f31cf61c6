package storeauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/qim-dev/qim/services/internal/config"
)

const pw = "hunter2-store-password"

// testCA writes a self-signed CA certificate as PEM and returns its path.
func testCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "storeauth test CA"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The zero Config is today's behaviour: no option is touched and Kafka gets no option at all.
func TestEmptyConfigChangesNothing(t *testing.T) {
	var c Config
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	o := redis.Options{Addr: "a:1"}
	if err := c.Redis.Apply(&o); err != nil || o.Username != "" || o.Password != "" || o.TLSConfig != nil {
		t.Fatalf("Redis.Apply = %+v, %v", o, err)
	}
	if opts, err := c.Kafka.Opts(); err != nil || opts != nil {
		t.Fatalf("Kafka.Opts = %v, %v", opts, err)
	}
	cc := gocql.NewCluster("a")
	if err := c.CQL.Apply(cc); err != nil || cc.Authenticator != nil || cc.SslOpts != nil {
		t.Fatalf("CQL.Apply = %+v %+v, %v", cc.Authenticator, cc.SslOpts, err)
	}
}

func TestFromEnvReadsPasswordFiles(t *testing.T) {
	ca := testCA(t)
	for k, v := range map[string]string{
		"QIM_REDIS_USERNAME": "qim", "QIM_REDIS_PASSWORD_FILE": writeFile(t, "redis", pw+"\n"), "QIM_REDIS_TLS_CA": ca,
		"QIM_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "QIM_KAFKA_USERNAME": "qim-k", "QIM_KAFKA_PASSWORD": pw,
		"QIM_CQL_USERNAME": "qim-c", "QIM_CQL_PASSWORD_FILE": writeFile(t, "cql", pw), "QIM_CQL_TLS_SERVER_NAME": "cql.internal",
		"QIM_CQL_TLS_CA": ca,
	} {
		t.Setenv(k, v)
	}
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if string(c.Redis.Password) != pw || string(c.CQL.Password) != pw || string(c.Kafka.Password) != pw ||
		c.Kafka.Mechanism != MechanismScramSHA512 || c.CQL.TLSServerName != "cql.internal" {
		t.Fatalf("FromEnv = %v", c)
	}
	if s := fmt.Sprintf("%v %+v %#v", c, c, c); strings.Contains(s, pw) {
		t.Fatalf("a printed Config shows the password: %s", s)
	}
}

func TestApplySetsEveryClient(t *testing.T) {
	ca := testCA(t)
	c := Config{
		Redis: Redis{Username: "qim", Password: config.Secret(pw), TLSCA: ca},
		Kafka: Kafka{Mechanism: MechanismScramSHA256, Username: "qim-k", Password: config.Secret(pw), TLSCA: ca},
		CQL:   CQL{Username: "qim-c", Password: config.Secret(pw), TLSCA: ca, TLSServerName: "cql.internal"},
	}
	var o redis.Options
	if err := c.Redis.Apply(&o); err != nil {
		t.Fatal(err)
	}
	if o.Username != "qim" || o.Password != pw || o.TLSConfig == nil || o.TLSConfig.RootCAs == nil ||
		o.TLSConfig.MinVersion != tls.VersionTLS12 || o.TLSConfig.InsecureSkipVerify {
		t.Fatalf("redis.Options = %+v", o)
	}
	opts, err := c.Kafka.Opts()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...) // no seeds: it never dials in this test
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	mechs, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism)
	tc, _ := cl.OptValue(kgo.DialTLSConfig).(*tls.Config)
	if len(mechs) != 1 || mechs[0].Name() != MechanismScramSHA256 || tc == nil || tc.RootCAs == nil {
		t.Fatalf("kgo SASL %v, TLS %v", mechs, tc)
	}
	cc := gocql.NewCluster("a")
	if err := c.CQL.Apply(cc); err != nil {
		t.Fatal(err)
	}
	auth, ok := cc.Authenticator.(gocql.PasswordAuthenticator)
	if !ok || auth.Username != "qim-c" || auth.Password != pw || cc.SslOpts == nil || !cc.SslOpts.EnableHostVerification ||
		cc.SslOpts.ServerName != "cql.internal" {
		t.Fatalf("gocql Authenticator %T, SslOpts %+v", cc.Authenticator, cc.SslOpts)
	}
}

func TestKafkaMechanisms(t *testing.T) {
	for _, m := range []string{MechanismScramSHA512, MechanismScramSHA256, MechanismPlain} {
		k := Kafka{Mechanism: m, Username: "u", Password: config.Secret(pw), TLSCA: testCA(t)}
		if got := k.mechanism(); got == nil || got.Name() != m {
			t.Errorf("%s: mechanism %v", m, got)
		}
	}
}

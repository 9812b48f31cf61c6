package storeauth_test

import (
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/services/internal/storeauth"
)

// kafkaRoundTrip produces one record to qim.outbox and consumes it back, both clients with the
// options of auth.
func kafkaRoundTrip(t *testing.T, auth storeauth.Kafka, brokers []string) {
	opts, err := auth.Opts()
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 30*time.Second)
	prod, err := kgo.NewClient(append(opts, kgo.SeedBrokers(brokers...))...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	val := []byte(fmt.Sprint("storeauth ", time.Now().UnixNano()))
	rec, err := prod.ProduceSync(ctx, &kgo.Record{Topic: stack.TopicOutbox, Value: val}).First()
	if err != nil {
		t.Fatalf("produce to %s: %v", stack.TopicOutbox, err)
	}
	cons, err := kgo.NewClient(append(opts, kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		stack.TopicOutbox: {rec.Partition: kgo.NewOffset().At(rec.Offset)}}))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: %v", stack.TopicOutbox, ctx.Err())
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		for _, r := range fs.Records() {
			if string(r.Value) == string(val) {
				return
			}
		}
	}
}

func kafkaRefusals(t *testing.T, auth storeauth.Kafka, brokers []string) {
	right := scram.Auth{User: auth.Username, Pass: string(auth.Password)}.AsSha512Mechanism()
	wrong := scram.Auth{User: auth.Username, Pass: "wrong"}.AsSha512Mechanism()
	for _, c := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"no TLS", []kgo.Opt{kgo.SASL(right)}},
		{"TLS without the CA", []kgo.Opt{kgo.SASL(right), kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12})}},
		{"no credentials", []kgo.Opt{kgo.DialTLSConfig(caOnly(t))}},
		{"wrong password", []kgo.Opt{kgo.SASL(wrong), kgo.DialTLSConfig(caOnly(t))}},
	} {
		cl, err := kgo.NewClient(append(c.opts, kgo.SeedBrokers(brokers...), kgo.DialTimeout(3*time.Second),
			kgo.RequestRetries(0), kgo.RetryTimeout(3*time.Second))...)
		if err != nil {
			t.Fatal(err)
		}
		err = cl.Ping(ctxFor(t, 10*time.Second))
		cl.Close()
		if err == nil {
			t.Errorf("kafka accepted a client with %s", c.name)
		} else {
			t.Logf("kafka, %s: refused (%v)", c.name, err)
		}
	}
}

// cqlRoundTrip creates a keyspace and a table, then writes and reads one row.
func cqlRoundTrip(t *testing.T, auth storeauth.CQL, addr string) {
	c, err := stack.CQLCluster(addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.Apply(c); err != nil {
		t.Fatal(err)
	}
	c.Timeout, c.ConnectTimeout = 20*time.Second, 10*time.Second // schema changes and TLS on 2 cores
	sess, err := c.CreateSession()
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	defer sess.Close()
	for _, q := range []string{
		`CREATE KEYSPACE IF NOT EXISTS qim_storeauth WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`CREATE TABLE IF NOT EXISTS qim_storeauth.kv (k text PRIMARY KEY, v text)`,
		`INSERT INTO qim_storeauth.kv (k, v) VALUES ('hello', 'secure world')`,
	} {
		if err := sess.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var v string
	if err := sess.Query(`SELECT v FROM qim_storeauth.kv WHERE k = 'hello'`).Scan(&v); err != nil || v != "secure world" {
		t.Fatalf("SELECT = %q, %v", v, err)
	}
}

func cqlRefusals(t *testing.T, auth storeauth.CQL, addr string) {
	login := func(user, pw string) gocql.Authenticator {
		return gocql.PasswordAuthenticator{Username: user, Password: pw}
	}
	verified := &gocql.SslOptions{Config: caOnly(t), EnableHostVerification: true}
	for _, c := range []struct {
		name string
		auth gocql.Authenticator
		ssl  *gocql.SslOptions
	}{
		{"no TLS", login(auth.Username, string(auth.Password)), nil},
		{"TLS without the CA", login(auth.Username, string(auth.Password)),
			&gocql.SslOptions{Config: &tls.Config{MinVersion: tls.VersionTLS12}, EnableHostVerification: true}},
		{"no credentials", nil, verified},
		{"wrong password", login(auth.Username, "wrong"), verified},
		{"the default superuser", login("cassandra", "cassandra"), verified},
	} {
		cc, err := stack.CQLCluster(addr)
		if err != nil {
			t.Fatal(err)
		}
		cc.Authenticator, cc.SslOpts, cc.ConnectTimeout = c.auth, c.ssl, 5*time.Second
		sess, err := cc.CreateSession()
		if err == nil {
			err = sess.Query(`SELECT release_version FROM system.local`).Exec()
			sess.Close()
		}
		if err == nil {
			t.Errorf("cql accepted a client with %s", c.name)
		} else {
			t.Logf("cql, %s: refused (%v)", c.name, err)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestCQLMigrateNeedsAContactPoint(t *testing.T) {
	var out bytes.Buffer
	err := runCQLMigrate(context.Background(), &cqlMigrateOptions{rf: 1, timeout: time.Second},
		func(string) string { return "" }, &out)
	if err == nil || !strings.Contains(err.Error(), "--cql-hosts") || !strings.Contains(err.Error(), "QIM_CQL_HOSTS") {
		t.Fatalf("migrate without hosts = %v, want an error naming --cql-hosts and QIM_CQL_HOSTS", err)
	}
}

func TestCQLMigrateFlagsFallBackToTheArchiverEnvironment(t *testing.T) {
	cmd := newCQLMigrateCmd(&cqlMigrateOptions{})
	for _, name := range []string{"cql-hosts", "cql-keyspace", "replication-factor", "datacenter", "cql-no-peer-discovery", "timeout"} {
		if cmd.Flags().Lookup(name) == nil {
			t.Errorf("flag --%s missing", name)
		}
	}
	// An unreachable contact point from the environment fails within the timeout, naming it.
	env := map[string]string{"QIM_CQL_HOSTS": "127.0.0.1:1"}
	err := runCQLMigrate(context.Background(), &cqlMigrateOptions{rf: 1, timeout: 5 * time.Second},
		func(k string) string { return env[k] }, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("migrate against 127.0.0.1:1 = %v, want an error naming it", err)
	}
}

func TestAuditArchiveNamesWhatIsMissing(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "QIM_KAFKA_BROKERS"},
		{map[string]string{"QIM_KAFKA_BROKERS": "127.0.0.1:1"}, "QIM_CQL_HOSTS"},
	} {
		err := runAuditArchive(context.Background(), &auditArchiveOptions{from: -1, to: -1, timeout: time.Second},
			func(k string) string { return tc.env[k] }, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("audit archive with %v = %v, want an error naming %s", tc.env, err, tc.want)
		}
	}
}

func TestHistoryBackfillNamesWhatIsMissing(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "QIM_REDIS_ADDR"},
		{map[string]string{"QIM_REDIS_ADDR": "127.0.0.1:1"}, "QIM_CQL_HOSTS"},
	} {
		err := runHistoryBackfill(context.Background(), &historyBackfillOptions{scan: 10, timeout: time.Second},
			func(k string) string { return tc.env[k] }, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("backfill with %v = %v, want an error naming %s", tc.env, err, tc.want)
		}
	}
}

// The CQL commands read the login and TLS the services read, and a half credential stops them
// before any connection, naming the variable.
func TestCQLCommandsReadTheStoreCredentials(t *testing.T) {
	env := map[string]string{"QIM_CQL_HOSTS": "127.0.0.1:1", "QIM_CQL_USERNAME": "qim", "QIM_CQL_PASSWORD": "pw"}
	cfg, err := (&cqlFlags{}).resolve("qimctl cql migrate", func(k string) string { return env[k] })
	if err != nil || cfg.Auth.Username != "qim" || string(cfg.Auth.Password) != "pw" {
		t.Fatalf("resolve = %+v, %v", cfg.Auth, err)
	}
	delete(env, "QIM_CQL_PASSWORD")
	if _, err := (&cqlFlags{}).resolve("qimctl cql migrate", func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "QIM_CQL_PASSWORD") {
		t.Fatalf("a user without a password = %v, want an error naming QIM_CQL_PASSWORD", err)
	}
}

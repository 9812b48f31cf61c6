package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHealthzExitsByStatus(t *testing.T) {
	for _, tc := range []struct {
		status int
		ok     bool
	}{{http.StatusOK, true}, {http.StatusServiceUnavailable, false}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/healthz" {
				http.NotFound(w, r)
				return
			}
			w.WriteHeader(tc.status)
		}))
		var out bytes.Buffer
		err := runHealthz(context.Background(), strings.TrimPrefix(srv.URL, "http://"), time.Minute, &out)
		srv.Close()
		if (err == nil) != tc.ok {
			t.Errorf("status %d: err %v, want ok=%v", tc.status, err, tc.ok)
		}
	}
}

func TestRebaseEnvNamesTheMountPoint(t *testing.T) {
	env := []string{"QIM_RPC_TLS_CA=/h/certs/ca.pem", "QIM_RPC_TLS_KEY=/h/certs/w.key", "QIM_RPC_PEERS=gateway:ab", "X=/elsewhere/f"}
	got := rebaseEnv(env, "/h/certs", "/certs")
	want := []string{"QIM_RPC_TLS_CA=/certs/ca.pem", "QIM_RPC_TLS_KEY=/certs/w.key", "QIM_RPC_PEERS=gateway:ab", "X=/elsewhere/f"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("rebaseEnv = %v, want %v", got, want)
	}
	if got := rebaseEnv(env, "/h/certs", ""); strings.Join(got, " ") != strings.Join(env, " ") {
		t.Errorf("no --env-dir changed the env: %v", got)
	}
}

func TestKafkaTopicsNeedsBrokers(t *testing.T) {
	err := runKafkaTopics(context.Background(), &kafkaTopicsOptions{replicas: 1, timeout: time.Second},
		func(string) string { return "" }, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "QIM_KAFKA_BROKERS") {
		t.Errorf("err %v, want one naming --brokers / QIM_KAFKA_BROKERS", err)
	}
}

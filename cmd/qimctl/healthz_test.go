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

func TestKafkaTopicsNeedsBrokers(t *testing.T) {
	err := runKafkaTopics(context.Background(), &kafkaTopicsOptions{replicas: 1, timeout: time.Second},
		func(string) string { return "" }, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "QIM_KAFKA_BROKERS") {
		t.Errorf("err %v, want one naming --brokers / QIM_KAFKA_BROKERS", err)
	}
}

func TestHealthzURL(t *testing.T) {
	for arg, want := range map[string]string{
		"127.0.0.1:9100":                   "http://127.0.0.1:9100/healthz",
		"writer-1:9100":                    "http://writer-1:9100/healthz",
		"http://10.0.0.5:9100":             "http://10.0.0.5:9100/healthz",
		"http://10.0.0.5:9100/":            "http://10.0.0.5:9100/healthz",
		"https://qim.example/gw/healthz":   "https://qim.example/gw/healthz",
		"http://[::1]:9100/healthz?full=1": "http://[::1]:9100/healthz?full=1",
	} {
		if got := healthzURL(arg); got != want {
			t.Errorf("healthzURL(%q) = %q, want %q", arg, got, want)
		}
	}
}

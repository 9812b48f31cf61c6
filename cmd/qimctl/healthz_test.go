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

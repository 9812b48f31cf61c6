package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHealthzAndOrphanOutcomeInvariant: /healthz is green with reachable backends, /metrics
// exposes the gateway's series, and an outcome for a call the gateway never made (which would
// mean answers were being matched to the wrong SEND) trips the always-zero invariant → 503.
func TestHealthzAndOrphanOutcomeInvariant(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	base := "http://" + h.addrs.Metrics
	if code, body := get(t, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz = %d %s", code, body)
	}
	c := h.login(newIdentity(t, "d"))
	h.writer.bogus.Store(true)
	c.writeBytes(contract.OpSend, c.nextID(), sendPayload(t, 5, cmid(t)))
	c.expect(contract.OpSendAck, nil) // the real answer still reaches its SEND
	code, body := get(t, base+"/healthz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "qim_gateway_send_outcome_orphaned_total") {
		t.Fatalf("/healthz after an orphan outcome = %d %q, want 503 naming the invariant", code, body)
	}
	_, metrics := get(t, base+"/metrics")
	for _, series := range []string{"qim_gateway_connections{", "qim_gateway_send_round_trip_seconds_bucket", "qim_gateway_auths_total",
		"qim_gateway_backend_queue_depth{"} {
		if !strings.Contains(metrics, series) {
			t.Fatalf("/metrics lacks %s", series)
		}
	}
}

func TestHealthzNotReadyWithoutBackend(t *testing.T) {
	h := startGateway(t, harnessOpts{mutate: func(c *Config) {
		c.MailboxAddrs = []string{"127.0.0.1:1"} // nothing listens there
		c.BackendTimeout = 300 * time.Millisecond
	}})
	if code, body := get(t, "http://"+h.addrs.Metrics+"/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "mailbox") {
		t.Fatalf("/healthz with the mailbox down = %d %q, want 503 naming the mailbox", code, body)
	}
	// AUTH cannot learn has_offline_data, so it fails UNAVAILABLE rather than guess "no".
	c := dialTCP(t, h.addrs.TCP)
	id := c.write(contract.OpAuth, &qimv1.AuthRequest{Token: newIdentity(t, "d").token})
	c.expectError(contract.ErrCodeUnavailable, id)
}

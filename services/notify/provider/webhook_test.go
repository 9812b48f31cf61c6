package provider_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/services/notify/provider"
	"github.com/qim-dev/qim/services/notify/provider/pushtest"
)

func startWebhook(t *testing.T) (*pushtest.Webhook, *provider.WebhookProvider) {
	t.Helper()
	srv, err := pushtest.StartWebhook()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	p, err := provider.NewWebhook(srv.Endpoint(), srv.Client(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return srv, p
}

func TestWebhookDelivers(t *testing.T) {
	srv, p := startWebhook(t)
	n := note("relay-token-1")
	if err := p.Send(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	n.Badge, n.ConversationSeq = -1, 8
	if err := p.Send(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	ds := srv.Deliveries()
	if len(ds) != 2 {
		t.Fatalf("%d deliveries, want 2", len(ds))
	}
	d := ds[0]
	if d.Platform != provider.Webhook || d.Token != "relay-token-1" || d.AppID != "dev.qim.app" ||
		d.Tenant != n.Tenant.String() || d.User != 42 || d.Device != "phone" ||
		d.Conversation != n.Conversation.String() || d.ConversationSeq != 7 ||
		d.MessageID != n.MessageID.String() || d.Sender != 43 || d.Badge != 3 || d.CollapseKey != "conv-3-4" {
		t.Fatalf("delivery = %+v", d)
	}
	if ds[1].Badge != -1 || ds[1].ConversationSeq != 8 {
		t.Fatalf("second delivery = %+v, want no badge and seq 8", ds[1])
	}
	if got := srv.Count(n.MessageID.String(), "relay-token-1"); got != 2 {
		t.Fatalf("Count = %d, want 2", got)
	}
}

func TestWebhookRefusals(t *testing.T) {
	srv, p := startWebhook(t)
	srv.Invalidate("gone")
	wantRefusal(t, p.Send(context.Background(), note("gone")), http.StatusGone, "", false, true)

	srv.FailWithRetryAfter(http.StatusServiceUnavailable, "down", 3*time.Second)
	se := wantRefusal(t, p.Send(context.Background(), note("t")), http.StatusServiceUnavailable, "", true, false)
	if se.RetryAfter != 3*time.Second {
		t.Fatalf("RetryAfter = %s, want 3s", se.RetryAfter)
	}
	srv.Fail(http.StatusTooManyRequests, "slow down")
	wantRefusal(t, p.Send(context.Background(), note("t")), http.StatusTooManyRequests, "", true, false)
	srv.Fail(http.StatusForbidden, "no")
	wantRefusal(t, p.Send(context.Background(), note("t")), http.StatusForbidden, "", false, false)

	srv.Heal()
	if err := p.Send(context.Background(), note("t")); err != nil {
		t.Fatal(err)
	}
	if srv.Attempts() != 5 || len(srv.Deliveries()) != 1 {
		t.Fatalf("attempts %d deliveries %d, want 5 and 1", srv.Attempts(), len(srv.Deliveries()))
	}
}

// TestWebhookTransportError: no answer is retryable, and the error does not quote the URL.
func TestWebhookTransportError(t *testing.T) {
	srv, p := startWebhook(t)
	srv.Close()
	err := p.Send(context.Background(), note("t"))
	se := wantRefusal(t, err, 0, "", true, false)
	if se.Err == nil || strings.Contains(err.Error(), srv.URL()) {
		t.Fatalf("err = %v, want a transport error without the URL", err)
	}
}

func TestNewWebhookRefuses(t *testing.T) {
	for _, c := range []struct {
		url     string
		timeout time.Duration
	}{
		{"http://relay.example.com/push", time.Second}, // a token in clear off loopback
		{"ftp://127.0.0.1/push", time.Second},
		{"https://relay.example.com/push", 0}, // an ambiguous zero
	} {
		if _, err := provider.NewWebhook(c.url, nil, c.timeout); err == nil {
			t.Errorf("NewWebhook(%q, %s) took it", c.url, c.timeout)
		}
	}
	if _, err := provider.NewWebhook("https://relay.example.com/push", nil, time.Second); err != nil {
		t.Fatal(err)
	}
}

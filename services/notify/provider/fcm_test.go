package provider_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/qim-dev/qim/services/notify/provider"
	"github.com/qim-dev/qim/services/notify/provider/pushtest"
)

func startFCM(t *testing.T) (*pushtest.FCM, *provider.FCMProvider) {
	t.Helper()
	srv, err := pushtest.StartFCM()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	p, err := provider.NewFCM(provider.FCMConfig{ServiceAccountJSON: srv.ServiceAccountJSON(),
		Endpoint: srv.URL(), Client: srv.Client(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return srv, p
}

func TestFCMDelivers(t *testing.T) {
	srv, p := startFCM(t)
	n := note("fcm-token:APA91b_1")
	if err := p.Send(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	n.Badge, n.CollapseKey = -1, ""
	if err := p.Send(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	ds := srv.Deliveries()
	if len(ds) != 2 {
		t.Fatalf("%d deliveries, want 2", len(ds))
	}
	d := ds[0]
	if d.Platform != provider.FCM || d.Token != n.Token || d.Conversation != n.Conversation.String() ||
		d.ConversationSeq != 7 || d.MessageID != n.MessageID.String() || d.Sender != 43 || d.Badge != 3 ||
		d.CollapseKey != "conv-3-4" || d.Header.Get("Authorization") != "" {
		t.Fatalf("delivery = %+v", d)
	}
	if ds[1].Badge != -1 || ds[1].CollapseKey != "" {
		t.Fatalf("second delivery = %+v, want no badge, no collapse key", ds[1])
	}
}

// TestFCMCachesAccessToken: one exchange serves many sends, concurrent first sends included.
func TestFCMCachesAccessToken(t *testing.T) {
	srv, p := startFCM(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() { errs <- p.Send(context.Background(), note("fcm-token")) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Send(context.Background(), note("fcm-token")); err != nil {
		t.Fatal(err)
	}
	if got := srv.TokenRequests(); got != 1 {
		t.Fatalf("%d token requests for 17 sends, want 1", got)
	}
}

// TestFCMRefreshesAfter401: a refused access token is dropped and the retry gets a new one;
// a new token refused in turn is no longer retryable.
func TestFCMRefreshesAfter401(t *testing.T) {
	srv, p := startFCM(t)
	ctx := context.Background()
	if err := p.Send(ctx, note("fcm-token")); err != nil {
		t.Fatal(err)
	}
	srv.ExpireAccessTokens()
	wantRefusal(t, p.Send(ctx, note("fcm-token")), http.StatusUnauthorized, "UNAUTHENTICATED", true, false)
	if err := p.Send(ctx, note("fcm-token")); err != nil {
		t.Fatalf("retry after 401: %v", err)
	}
	if got := srv.TokenRequests(); got != 2 {
		t.Fatalf("%d token requests, want 2", got)
	}

	srv.Fail(http.StatusUnauthorized, "")
	wantRefusal(t, p.Send(ctx, note("fcm-token")), http.StatusUnauthorized, "UNAUTHENTICATED", true, false)
	wantRefusal(t, p.Send(ctx, note("fcm-token")), http.StatusUnauthorized, "UNAUTHENTICATED", false, false)
	srv.Heal()
	if err := p.Send(ctx, note("fcm-token")); err != nil {
		t.Fatal(err)
	}
	srv.ExpireAccessTokens() // an accepted send ends the streak: the next refusal is retryable again
	wantRefusal(t, p.Send(ctx, note("fcm-token")), http.StatusUnauthorized, "UNAUTHENTICATED", true, false)
}

func TestFCMRefusals(t *testing.T) {
	srv, p := startFCM(t)
	ctx := context.Background()
	srv.Invalidate("stale")
	wantRefusal(t, p.Send(ctx, note("stale")), http.StatusNotFound, "UNREGISTERED", false, true)
	// FCM's 400 about the token itself.
	wantRefusal(t, p.Send(ctx, note("not a token")), http.StatusBadRequest, "INVALID_ARGUMENT", false, true)
	// A 400 about the message must not cost the device its token.
	srv.Fail(http.StatusBadRequest, "INVALID_ARGUMENT")
	wantRefusal(t, p.Send(ctx, note("fcm-token")), http.StatusBadRequest, "INVALID_ARGUMENT", false, false)
	// Neither may a 404 that is not FCM's UNREGISTERED (a wrong project or endpoint).
	srv.Fail(http.StatusNotFound, "")
	wantRefusal(t, p.Send(ctx, note("fcm-token")), http.StatusNotFound, "NOT_FOUND", false, false)
	srv.Fail(http.StatusForbidden, "SENDER_ID_MISMATCH")
	wantRefusal(t, p.Send(ctx, note("fcm-token")), http.StatusForbidden, "SENDER_ID_MISMATCH", false, true)

	srv.FailWithRetryAfter(http.StatusServiceUnavailable, "UNAVAILABLE", 2*time.Second)
	se := wantRefusal(t, p.Send(ctx, note("fcm-token")), http.StatusServiceUnavailable, "UNAVAILABLE", true, false)
	if se.RetryAfter != 2*time.Second {
		t.Fatalf("RetryAfter = %s, want 2s", se.RetryAfter)
	}
	srv.FailWithRetryAfter(http.StatusTooManyRequests, "QUOTA_EXCEEDED", 60*time.Second)
	se = wantRefusal(t, p.Send(ctx, note("fcm-token")), http.StatusTooManyRequests, "QUOTA_EXCEEDED", true, false)
	if se.RetryAfter != time.Minute {
		t.Fatalf("RetryAfter = %s, want 1m", se.RetryAfter)
	}
	srv.Fail(http.StatusInternalServerError, "INTERNAL")
	wantRefusal(t, p.Send(ctx, note("fcm-token")), http.StatusInternalServerError, "INTERNAL", true, false)
	if n := len(srv.Deliveries()); n != 0 {
		t.Fatalf("%d deliveries, want 0", n)
	}
}

// TestFCMExchangeRefused: a key the token endpoint does not know fails the send, not retryable.
func TestFCMExchangeRefused(t *testing.T) {
	srv, _ := startFCM(t)
	other, err := pushtest.StartFCM()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var sa map[string]string
	if err := json.Unmarshal(other.ServiceAccountJSON(), &sa); err != nil {
		t.Fatal(err)
	}
	sa["token_uri"] = srv.URL() + "/token" // other's key, srv's token endpoint
	b, _ := json.Marshal(sa)
	p, err := provider.NewFCM(provider.FCMConfig{ServiceAccountJSON: b, Endpoint: srv.URL(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	wantRefusal(t, p.Send(context.Background(), note("fcm-token")), http.StatusBadRequest, "token exchange invalid_grant", false, false)
}

func TestFCMConfigRefuses(t *testing.T) {
	srv, _ := startFCM(t)
	var good map[string]string
	if err := json.Unmarshal(srv.ServiceAccountJSON(), &good); err != nil {
		t.Fatal(err)
	}
	with := func(k, v string) []byte {
		sa := map[string]string{}
		for k, v := range good {
			sa[k] = v
		}
		sa[k] = v
		b, _ := json.Marshal(sa)
		return b
	}
	for name, cfg := range map[string]provider.FCMConfig{
		"not json":           {ServiceAccountJSON: []byte("{"), Timeout: time.Second},
		"not a service acct": {ServiceAccountJSON: with("type", "authorized_user"), Timeout: time.Second},
		"no project":         {ServiceAccountJSON: with("project_id", ""), Timeout: time.Second},
		"bad key":            {ServiceAccountJSON: with("private_key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), Timeout: time.Second},
		"token_uri in clear": {ServiceAccountJSON: with("token_uri", "http://oauth2.example.com/token"), Timeout: time.Second},
		"endpoint in clear":  {ServiceAccountJSON: with("type", "service_account"), Endpoint: "http://fcm.example.com", Timeout: time.Second},
		"no timeout":         {ServiceAccountJSON: with("type", "service_account")},
	} {
		if _, err := provider.NewFCM(cfg); err == nil {
			t.Errorf("%s: NewFCM took it", name)
		}
	}
}

package provider_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qim-dev/qim/services/notify/provider"
	"github.com/qim-dev/qim/services/notify/provider/pushtest"
)

// startAPNs starts a stand-in and a provider that share clk.
func startAPNs(t *testing.T, clk *clock) (*pushtest.APNs, *provider.APNsProvider) {
	t.Helper()
	srv, err := pushtest.StartAPNs(pushtest.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	p, err := provider.NewAPNs(provider.APNsConfig{KeyP8: srv.KeyP8(), KeyID: srv.KeyID(), TeamID: srv.TeamID(),
		Endpoint: srv.URL(), Client: srv.Client(), Timeout: 5 * time.Second, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return srv, p
}

func TestAPNsDelivers(t *testing.T) {
	srv, p := startAPNs(t, newClock())
	n := note(apnsToken)
	n.CollapseKey = strings.Repeat("c", 63) + "é" // 65 bytes: cut before the é, not through it
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
	if d.Platform != provider.APNs || d.Token != apnsToken || d.AppID != "dev.qim.app" ||
		d.Conversation != n.Conversation.String() || d.ConversationSeq != 7 ||
		d.MessageID != n.MessageID.String() || d.Sender != 43 || d.Badge != 3 ||
		d.CollapseKey != strings.Repeat("c", 63) {
		t.Fatalf("delivery = %+v", d)
	}
	for h, want := range map[string]string{"Apns-Push-Type": "alert", "Apns-Priority": "10",
		"Apns-Expiration": "0", "Apns-Topic": "dev.qim.app", "Authorization": ""} {
		if got := d.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if ds[1].Badge != -1 || ds[1].Header.Get("Apns-Collapse-Id") != "" {
		t.Fatalf("second delivery = %+v, want no badge, no collapse id", ds[1])
	}
}

// TestAPNsProviderTokenLifetime: one token for 50 minutes whatever the concurrency, then a new one.
func TestAPNsProviderTokenLifetime(t *testing.T) {
	clk := newClock()
	srv, p := startAPNs(t, clk)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() { errs <- p.Send(context.Background(), note(apnsToken)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(49*time.Minute + 59*time.Second)
	if err := p.Send(context.Background(), note(apnsToken)); err != nil {
		t.Fatal(err)
	}
	if got := srv.ProviderTokens(); got != 1 {
		t.Fatalf("%d provider tokens within 50 minutes, want 1", got)
	}
	clk.Advance(time.Second)
	if err := p.Send(context.Background(), note(apnsToken)); err != nil {
		t.Fatal(err)
	}
	if got := srv.ProviderTokens(); got != 2 {
		t.Fatalf("%d provider tokens at 50 minutes, want 2", got)
	}
}

// TestAPNsRefreshesAfterExpiredProviderToken: the refused token is replaced, the retry takes
// the new one; a new token refused in turn is no longer retryable.
func TestAPNsRefreshesAfterExpiredProviderToken(t *testing.T) {
	srv, p := startAPNs(t, newClock())
	ctx := context.Background()
	if err := p.Send(ctx, note(apnsToken)); err != nil {
		t.Fatal(err)
	}
	srv.ExpireProviderTokens()
	wantRefusal(t, p.Send(ctx, note(apnsToken)), http.StatusForbidden, "ExpiredProviderToken", true, false)
	if err := p.Send(ctx, note(apnsToken)); err != nil {
		t.Fatalf("retry after ExpiredProviderToken: %v", err)
	}
	if got := srv.ProviderTokens(); got != 2 {
		t.Fatalf("%d provider tokens, want 2", got)
	}

	srv.Fail(http.StatusForbidden, "InvalidProviderToken")
	wantRefusal(t, p.Send(ctx, note(apnsToken)), http.StatusForbidden, "InvalidProviderToken", true, false)
	wantRefusal(t, p.Send(ctx, note(apnsToken)), http.StatusForbidden, "InvalidProviderToken", false, false)
	srv.Heal()
	if err := p.Send(ctx, note(apnsToken)); err != nil {
		t.Fatal(err)
	}
}

func TestAPNsRefusals(t *testing.T) {
	srv, p := startAPNs(t, newClock())
	ctx := context.Background()
	srv.Invalidate(apnsToken)
	wantRefusal(t, p.Send(ctx, note(apnsToken)), http.StatusGone, "Unregistered", false, true)
	wantRefusal(t, p.Send(ctx, note("abc/../x")), http.StatusBadRequest, "BadDeviceToken", false, true)
	n := note(strings.Repeat("ab", 32))
	n.AppID = ""
	wantRefusal(t, p.Send(ctx, n), http.StatusBadRequest, "MissingTopic", false, false)
	srv.Fail(http.StatusBadRequest, "DeviceTokenNotForTopic")
	wantRefusal(t, p.Send(ctx, note(apnsToken)), http.StatusBadRequest, "DeviceTokenNotForTopic", false, true)

	for _, c := range []struct {
		status int
		reason string
	}{{503, "ServiceUnavailable"}, {500, "InternalServerError"}, {429, "TooManyRequests"}} {
		srv.FailWithRetryAfter(c.status, c.reason, 5*time.Second)
		se := wantRefusal(t, p.Send(ctx, note(apnsToken)), c.status, c.reason, true, false)
		if se.RetryAfter != 5*time.Second {
			t.Fatalf("%d: RetryAfter = %s, want 5s", c.status, se.RetryAfter)
		}
	}
	srv.Fail(http.StatusForbidden, "BadCertificateEnvironment")
	wantRefusal(t, p.Send(ctx, note(apnsToken)), http.StatusForbidden, "BadCertificateEnvironment", false, false)
	if n := len(srv.Deliveries()); n != 0 {
		t.Fatalf("%d deliveries, want 0", n)
	}
}

// TestAPNsTransportError: no answer is retryable, and the error does not quote the URL, whose
// path is the device token.
func TestAPNsTransportError(t *testing.T) {
	srv, p := startAPNs(t, newClock())
	srv.Close()
	err := p.Send(context.Background(), note(apnsToken))
	wantRefusal(t, err, 0, "", true, false)
	if strings.Contains(err.Error(), apnsToken) {
		t.Fatalf("err = %v quotes the device token", err)
	}
}

func TestAPNsConfigRefuses(t *testing.T) {
	srv, err := pushtest.StartAPNs()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	good := provider.APNsConfig{KeyP8: srv.KeyP8(), KeyID: srv.KeyID(), TeamID: srv.TeamID(), Timeout: time.Second}
	fcm, err := pushtest.StartFCM()
	if err != nil {
		t.Fatal(err)
	}
	defer fcm.Close()
	customTLS := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{}}}
	for name, mod := range map[string]func(c *provider.APNsConfig){
		"no key id":              func(c *provider.APNsConfig) { c.KeyID = "" },
		"no team id":             func(c *provider.APNsConfig) { c.TeamID = "" },
		"no timeout":             func(c *provider.APNsConfig) { c.Timeout = 0 },
		"not a key":              func(c *provider.APNsConfig) { c.KeyP8 = []byte("nope") },
		"http/1 transport":       func(c *provider.APNsConfig) { c.Client = http1Client() },
		"custom tls without h2":  func(c *provider.APNsConfig) { c.Client = customTLS },
		"endpoint in clear":      func(c *provider.APNsConfig) { c.Endpoint = "http://api.push.apple.com" },
		"rsa key (fcm's) for es": func(c *provider.APNsConfig) { c.KeyP8 = rsaKeyPEM(t, fcm) },
	} {
		cfg := good
		mod(&cfg)
		if _, err := provider.NewAPNs(cfg); err == nil {
			t.Errorf("%s: NewAPNs took it", name)
		}
	}
	if _, err := provider.NewAPNs(good); err != nil {
		t.Fatal(err)
	}
}

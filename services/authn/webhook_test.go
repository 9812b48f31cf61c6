package authn_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/authn"
	"github.com/qim-dev/qim/services/authn/authntest"
)

func hookRouter(t *testing.T, idp *authntest.IdP, w authn.Webhook) *authn.Router {
	t.Helper()
	w.URL = idp.HookURL()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r, err := authn.NewRouter(ctx, authn.Options{Webhook: &w, Issuers: []authn.Issuer{{Issuer: idp.Issuer(), JWKSURL: idp.URL()}}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newIdP(t *testing.T) *authntest.IdP {
	t.Helper()
	idp, err := authntest.New("https://hooked.example/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idp.Close() })
	return idp
}

// The hook's answer is the identity; 403 is a refusal, anything else from a hook that is down
// is UNAVAILABLE and is asked again next time.
func TestWebhookAnswers(t *testing.T) {
	idp := newIdP(t)
	r := hookRouter(t, idp, authn.Webhook{})
	ctx := context.Background()
	id, err := r.Verify(ctx, authn.Credential{Token: authntest.HookToken(42, 7, "phone", time.Hour), Device: "phone"})
	if err != nil || id.User != 42 || id.Tenant != (contract.TenantID{Lo: 7}) || id.Device != "phone" || id.ExpiresAt.IsZero() {
		t.Fatalf("accepted: %+v, %v", id, err)
	}
	for _, c := range []struct {
		token string
		want  error
	}{
		{"hook-deny:x", authn.ErrRejected},
		{"an opaque session cookie", authn.ErrRejected},
		{"hook-garbage:x", authn.ErrUnavailable},
		{jwtOf(t, idp, "https://not-configured.example/"), authn.ErrUnknownIssuer},
	} {
		if _, err := r.Verify(ctx, authn.Credential{Token: c.token}); !errors.Is(err, c.want) {
			t.Errorf("%q: %v, want %v", c.token, err, c.want)
		}
	}
	idp.SetHookFailing(true)
	down := authntest.HookToken(43, 7, "", time.Hour)
	if _, err := r.Verify(ctx, authn.Credential{Token: down, Device: "tab"}); !errors.Is(err, authn.ErrUnavailable) {
		t.Fatalf("hook down: %v, want ErrUnavailable", err)
	}
	idp.SetHookFailing(false)
	if id, err := r.Verify(ctx, authn.Credential{Token: down, Device: "tab"}); err != nil || id.User != 43 || id.Device != "" {
		t.Fatalf("hook back, same token: %+v, %v (an outage must not be cached)", id, err)
	}
}

// One call per (token, device) per TTL, whatever the outcome; a JWT of a configured issuer never
// reaches the hook.
func TestWebhookCache(t *testing.T) {
	idp := newIdP(t)
	r := hookRouter(t, idp, authn.Webhook{})
	ctx := context.Background()
	tok := authntest.HookToken(42, 0, "", time.Hour)
	for range 5 {
		if _, err := r.Verify(ctx, authn.Credential{Token: tok, Device: "a"}); err != nil {
			t.Fatal(err)
		}
		_, _ = r.Verify(ctx, authn.Credential{Token: "hook-deny:y", Device: "a"})
	}
	if _, err := r.Verify(ctx, authn.Credential{Token: tok, Device: "b"}); err != nil {
		t.Fatal(err)
	}
	if got := idp.HookCalls(); got != 3 {
		t.Fatalf("%d hook calls, want 3 (two devices of one token, one refused token)", got)
	}
	kid, err := idp.AddKey("EdDSA", false)
	if err != nil {
		t.Fatal(err)
	}
	jwtTok, err := idp.Sign(kid, idp.Claims(42, "phone", time.Hour), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Verify(ctx, authn.Credential{Token: jwtTok}); err != nil || idp.HookCalls() != 3 {
		t.Fatalf("JWT of a configured issuer: %v, hook calls %d", err, idp.HookCalls())
	}
	off := authn.Duration(0)
	uncached := hookRouter(t, idp, authn.Webhook{CacheTTL: &off})
	for range 2 {
		if _, err := uncached.Verify(ctx, authn.Credential{Token: tok, Device: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := idp.HookCalls(); got != 5 {
		t.Fatalf("cache_ttl 0s: %d hook calls in all, want 5", got)
	}
}

// A hook slower than the timeout, or all of whose slots are busy, is UNAVAILABLE.
func TestWebhookTimeoutAndConcurrency(t *testing.T) {
	idp := newIdP(t)
	r := hookRouter(t, idp, authn.Webhook{Timeout: authn.Duration(100 * time.Millisecond), MaxConcurrency: 1})
	idp.SetHookDelay(2 * time.Second)
	done := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := r.Verify(context.Background(), authn.Credential{Token: authntest.HookToken(uint64(50+i), 0, "d", 0)})
			done <- err
		}()
	}
	for range 2 {
		if err := <-done; !errors.Is(err, authn.ErrUnavailable) {
			t.Fatalf("slow hook: %v, want ErrUnavailable", err)
		}
	}
}

// jwtOf is a well-formed JWT claiming issuer iss.
func jwtOf(t *testing.T, idp *authntest.IdP, iss string) string {
	t.Helper()
	kid, err := idp.AddKey("EdDSA", true)
	if err != nil {
		t.Fatal(err)
	}
	c := idp.Claims(42, "phone", time.Hour)
	c["iss"] = iss
	tok, err := idp.Sign(kid, c, false)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

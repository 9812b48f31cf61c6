package provider_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/notify/provider"
	"github.com/qim-dev/qim/services/notify/provider/pushtest"
)

// apnsToken is a device token of the form Apple issues (64 hex).
const apnsToken = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"

// note is a notification to token with every field set.
func note(token string) provider.Notification {
	return provider.Notification{
		Tenant: contract.U128{Hi: 1, Lo: 2}, User: 42, DeviceID: "phone", Token: token, AppID: "dev.qim.app",
		Conversation: contract.ConversationID{Hi: 3, Lo: 4}, ConversationSeq: 7,
		MessageID: contract.MessageID{Hi: 5, Lo: 6}, Sender: 43, Badge: 3, CollapseKey: "conv-3-4",
	}
}

// sendError asserts err is a *SendError and returns it.
func sendError(t *testing.T, err error) *provider.SendError {
	t.Helper()
	var se *provider.SendError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a *provider.SendError", err)
	}
	return se
}

// wantRefusal checks the parts of a SendError the caller branches on.
func wantRefusal(t *testing.T, err error, status int, reason string, retryable, tokenInvalid bool) provider.SendError {
	t.Helper()
	se := sendError(t, err)
	if se.Status != status || se.Reason != reason || se.Retryable != retryable || errors.Is(err, provider.ErrTokenInvalid) != tokenInvalid {
		t.Fatalf("err = %#v (%v), want status %d reason %q retryable %v token invalid %v",
			se, err, status, reason, retryable, tokenInvalid)
	}
	return *se // a value, not an error: the callers read its fields
}

// clock is a settable clock for the provider token's age.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// http1Client speaks HTTP/1.1 only.
func http1Client() *http.Client {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	return &http.Client{Transport: &http.Transport{Protocols: p}}
}

// rsaKeyPEM is the FCM stand-in's RSA key, as a PEM the APNs provider must refuse.
func rsaKeyPEM(t *testing.T, f *pushtest.FCM) []byte {
	t.Helper()
	var sa struct {
		PrivateKey string `json:"private_key"`
	}
	if err := json.Unmarshal(f.ServiceAccountJSON(), &sa); err != nil {
		t.Fatal(err)
	}
	return []byte(sa.PrivateKey)
}

// The three providers are Providers.
var (
	_ provider.Provider = (*provider.WebhookProvider)(nil)
	_ provider.Provider = (*provider.FCMProvider)(nil)
	_ provider.Provider = (*provider.APNsProvider)(nil)
)

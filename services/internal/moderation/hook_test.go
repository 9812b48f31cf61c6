package moderation

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
)

func hookAnswering(t *testing.T, status int, body string, delay time.Duration) *Hook {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return New(Options{URL: srv.URL, Timeout: 200 * time.Millisecond, MaxConcurrency: 4, MaxBody: 16})
}

func check(t *testing.T, h *Hook) (Decision, error) {
	t.Helper()
	return h.Check(t.Context(), MessageOf(contract.TenantID{Lo: 1}, 2, "d", contract.DirectConversationID(contract.TenantID{Lo: 1}, 2, 3),
		3, contract.U128{Lo: 9}, 1, "", nil, []byte("hi")))
}

func TestDecisions(t *testing.T) {
	for body, want := range map[string]Decision{
		`{"action": "allow"}`:                       {Action: Allow},
		`{"action": "reject", "reason": "spam"}`:    {Action: Reject, Reason: "spam"},
		`{"action": "rewrite", "body": "KioqKg=="}`: {Action: Rewrite, Body: []byte("****")},
	} {
		got, err := check(t, hookAnswering(t, 200, body, 0))
		if err != nil || got.Action != want.Action || got.Reason != want.Reason || string(got.Body) != string(want.Body) {
			t.Errorf("%s: %+v, %v; want %+v", body, got, err, want)
		}
	}
}

// Whatever is not a valid decision is the hook being unavailable: the writer's policy decides,
// a broken backend never lets a message through as if it had allowed it.
func TestEverythingElseIsUnavailable(t *testing.T) {
	for name, h := range map[string]*Hook{
		"status 500":              hookAnswering(t, 500, `{"action": "allow"}`, 0),
		"malformed":               hookAnswering(t, 200, `{"action": `, 0),
		"unknown action":          hookAnswering(t, 200, `{"action": "maybe"}`, 0),
		"reject without a reason": hookAnswering(t, 200, `{"action": "reject"}`, 0),
		"reason with spaces":      hookAnswering(t, 200, `{"action": "reject", "reason": "no way"}`, 0),
		"rewrite above the limit": hookAnswering(t, 200, `{"action": "rewrite", "body": "MDEyMzQ1Njc4OTAxMjM0NTY3OA=="}`, 0),
		"too slow":                hookAnswering(t, 200, `{"action": "allow"}`, time.Second),
	} {
		if _, err := check(t, h); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", name, err)
		}
	}
}

func TestConfig(t *testing.T) {
	ok := []Config{{}, {URL: "https://mod.example/check"}, {URL: "http://127.0.0.1:8080/x", Tenants: []string{"7", "0000000000000001000000000000000a"}}}
	for _, c := range ok {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	bad := []Config{{URL: "http://mod.example/check"}, {URL: "https://m/x", Timeout: time.Millisecond},
		{URL: "https://m/x", Tenants: []string{"x7"}}, {URL: "ftp://m/x"}}
	for _, c := range bad {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	c := Config{URL: "https://m/x", Tenants: []string{"7"}}
	_ = c.Validate()
	if !c.Applies(contract.TenantID{Lo: 7}) || c.Applies(contract.TenantID{Lo: 8}) {
		t.Error("Applies ignores QIM_MODERATION_TENANTS")
	}
}

package authn

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"

	"github.com/qim-dev/qim/contract"
)

// Webhook is the connect webhook of the issuers file: opaque credentials (neither a dev token nor
// a JWT) are POSTed to the product's backend, which answers who they are.
//
// Request: POST url, Content-Type application/json,
//
//	{"token": "...", "device_id": "...", "client_version": "...", "remote_addr": "..."}
//
// Answer 200 with {"user": 42, "tenant": 7 (optional), "device": "phone" (optional),
// "expires_at": 1767225600 (Unix seconds, optional)}; user and tenant may also be strings. 401
// or 403 refuses the credential. Anything else — another status, a timeout, a malformed body —
// means the hook is down: the AUTH is answered UNAVAILABLE (the client retries), never admitted.
type Webhook struct {
	// URL of the hook (https, or http on loopback).
	URL string `json:"url"`
	// Timeout bounds one call (default 2s): an AUTH waits at most this long for the hook.
	Timeout Duration `json:"timeout,omitempty"`
	// MaxConcurrency bounds the calls in flight per gateway (default 64); an AUTH that finds
	// them all busy waits within Timeout, then is answered UNAVAILABLE. It keeps a reconnect
	// storm from becoming a flood on the product's backend.
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// CacheTTL keeps an answer (acceptance or refusal) for this long per (token, device), so a
	// client reconnecting in a loop costs one call per TTL (default 30s; "0s" turns it off).
	// An acceptance is never served past the expires_at it carried.
	CacheTTL *Duration `json:"cache_ttl,omitempty"`
}

// Defaults of the webhook's knobs; webhookCacheSize bounds the cache's memory (an entry is a
// hash and an Identity, ~150 bytes).
const (
	defaultHookTimeout     = 2 * time.Second
	defaultHookConcurrency = 64
	defaultHookCacheTTL    = 30 * time.Second
	webhookCacheSize       = 100_000
	webhookAnswerMaxBytes  = 64 << 10
)

// HookObserver is told each hook call's outcome (ok, refused, unavailable) and duration.
type HookObserver func(outcome string, took time.Duration)

// webhook calls the connect hook. Rejected alternative: a cache without a bound on entries,
// which an attacker presenting many distinct tokens could grow without limit.
type webhook struct {
	cfg     Webhook
	client  *http.Client
	sem     chan struct{}
	cache   *expirable.LRU[[32]byte, hookAnswer] // nil when CacheTTL is 0
	observe HookObserver
}

// hookAnswer is a cached outcome: an Identity, or the refusal.
type hookAnswer struct {
	id  Identity
	err error
}

func newWebhook(w Webhook, observe HookObserver) *webhook {
	h := &webhook{cfg: w, observe: observe}
	if h.cfg.Timeout == 0 {
		h.cfg.Timeout = Duration(defaultHookTimeout)
	}
	if h.cfg.MaxConcurrency == 0 {
		h.cfg.MaxConcurrency = defaultHookConcurrency
	}
	ttl := defaultHookCacheTTL
	if w.CacheTTL != nil {
		ttl = time.Duration(*w.CacheTTL)
	}
	if ttl > 0 {
		h.cache = expirable.NewLRU[[32]byte, hookAnswer](webhookCacheSize, nil, ttl)
	}
	h.client = &http.Client{Timeout: time.Duration(h.cfg.Timeout)}
	h.sem = make(chan struct{}, h.cfg.MaxConcurrency)
	return h
}

// verify answers from the cache or asks the hook. Unavailability is not cached: the next AUTH
// asks again.
func (h *webhook) verify(ctx context.Context, c Credential) (Identity, error) {
	key := sha256.Sum256([]byte(c.Device + "\x00" + c.Token))
	if h.cache != nil {
		if a, ok := h.cache.Get(key); ok {
			if a.err != nil || a.id.ExpiresAt.IsZero() || time.Now().Before(a.id.ExpiresAt) {
				return a.id, a.err
			}
			h.cache.Remove(key)
		}
	}
	t := time.Now()
	id, err := h.call(ctx, c)
	outcome := "ok"
	switch {
	case errors.Is(err, ErrUnavailable):
		outcome = "unavailable"
	case err != nil:
		outcome = "refused"
	}
	if h.observe != nil {
		h.observe(outcome, time.Since(t))
	}
	if h.cache != nil && outcome != "unavailable" {
		h.cache.Add(key, hookAnswer{id: id, err: err})
	}
	return id, err
}

// call makes one bounded request: a slot of the concurrency limit, then the POST, both within
// Timeout.
func (h *webhook) call(ctx context.Context, c Credential) (Identity, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(h.cfg.Timeout))
	defer cancel()
	select {
	case h.sem <- struct{}{}:
		defer func() { <-h.sem }()
	case <-ctx.Done():
		return Identity{}, fmt.Errorf("%w: connect webhook: %d calls in flight for %s", ErrUnavailable, cap(h.sem), time.Duration(h.cfg.Timeout))
	}
	body, err := json.Marshal(map[string]string{"token": c.Token, "device_id": c.Device, "client_version": c.ClientVersion, "remote_addr": c.Remote})
	if err != nil {
		return Identity{}, fmt.Errorf("%w: connect webhook: %w", ErrUnavailable, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return Identity{}, fmt.Errorf("%w: connect webhook: %w", ErrUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: connect webhook: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, webhookAnswerMaxBytes+1))
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return Identity{}, fmt.Errorf("%w: the connect webhook answered %d", ErrRejected, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return Identity{}, fmt.Errorf("%w: the connect webhook answered %d", ErrUnavailable, resp.StatusCode)
	case err != nil || len(b) > webhookAnswerMaxBytes:
		return Identity{}, fmt.Errorf("%w: connect webhook answer unreadable or over %d bytes", ErrUnavailable, webhookAnswerMaxBytes)
	}
	id, err := parseHookAnswer(b)
	id.IssuedAt = time.Now() // the hook vouched for the credential now: a later revocation covers it
	return id, err
}

// hookAnswerJSON is a 200 answer's body.
type hookAnswerJSON struct {
	User      json.RawMessage `json:"user"`
	Tenant    json.RawMessage `json:"tenant"`
	Device    string          `json:"device"`
	ExpiresAt int64           `json:"expires_at"`
}

// parseHookAnswer reads a 200 answer. A malformed one is the hook's fault, so it is UNAVAILABLE
// (the operator must fix the hook), never an admission.
func parseHookAnswer(b []byte) (Identity, error) {
	var a hookAnswerJSON
	if err := json.Unmarshal(b, &a); err != nil {
		return Identity{}, fmt.Errorf("%w: connect webhook answer: %w", ErrUnavailable, err)
	}
	user, err := strconv.ParseUint(scalar(a.User), 10, 64)
	if err != nil || user == 0 {
		return Identity{}, fmt.Errorf("%w: connect webhook answer: user must be a decimal from 1", ErrUnavailable)
	}
	id := Identity{User: contract.UserID(user), Device: a.Device}
	if len(a.Tenant) != 0 {
		if id.Tenant, err = ParseTenant(scalar(a.Tenant)); err != nil {
			return Identity{}, fmt.Errorf("%w: connect webhook answer: %w", ErrUnavailable, err)
		}
	}
	if len(a.Device) > contract.DeviceIDMaxBytes {
		return Identity{}, fmt.Errorf("%w: connect webhook answer: device over %d bytes", ErrUnavailable, contract.DeviceIDMaxBytes)
	}
	if a.ExpiresAt > 0 {
		id.ExpiresAt = time.Unix(a.ExpiresAt, 0)
		if !time.Now().Before(id.ExpiresAt) {
			return Identity{}, fmt.Errorf("%w: the connect webhook's expires_at has passed", ErrExpired)
		}
	}
	return id, nil
}

// scalar is a JSON number's text, or a JSON string's content ("" for anything else).
func scalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

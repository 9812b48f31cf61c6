package authn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/qim-dev/qim/contract"
)

// IssuersFile is the JSON document QIM_AUTH_ISSUERS names: the identity providers whose JWTs
// the gateway accepts. Unknown fields are refused, so a misspelt "audience" cannot silently
// turn a check off.
type IssuersFile struct {
	Issuers []Issuer `json:"issuers,omitempty"`
	// ConnectWebhook, when set, verifies every credential that is neither a dev token nor a JWT
	// (webhook.go); a JWT of an issuer not listed is refused, not sent to it.
	ConnectWebhook *Webhook `json:"connect_webhook,omitempty"`
}

// Issuer is one identity provider, matched by the token's iss. A deployment with one tenant per
// provider fixes Tenant; a provider serving many tenants names the claim that carries it.
type Issuer struct {
	// Issuer is the exact iss value of this provider's tokens (required).
	Issuer string `json:"issuer"`
	// Audience, when set, must be among the token's aud values.
	Audience string `json:"audience,omitempty"`
	// Tenant fixes the tenant of every token of this issuer (32 hex digits or a decimal);
	// exclusive with TenantClaim. Neither: tenant 0, the single-tenant deployment.
	Tenant string `json:"tenant,omitempty"`
	// TenantClaim names the claim holding the tenant (a string of 32 hex digits or a decimal,
	// or a number).
	TenantClaim string `json:"tenant_claim,omitempty"`
	// DeviceClaim names the claim holding the device (default "device"). A token without it is
	// valid for any device of its user; the AuthRequest's device_id names which.
	DeviceClaim string `json:"device_claim,omitempty"`
	// Leeway is the clock skew allowed on exp, nbf and iat (default 30s, at most 5m).
	Leeway Duration `json:"leeway,omitempty"`
	// JWKSURL is the provider's JSON Web Key Set (https, or http on loopback).
	JWKSURL string `json:"jwks_url,omitempty"`
	// JWKSRefresh is how often the key set is re-read in the background (default 1h).
	JWKSRefresh Duration `json:"jwks_refresh,omitempty"`
	// JWKSUnknownKIDInterval is the least time between two fetches caused by tokens naming a
	// kid the cache lacks (default 10s): a flood of made-up kids costs the provider one request
	// per interval, and a rotated key is picked up by the first token that names it.
	JWKSUnknownKIDInterval Duration `json:"jwks_unknown_kid_interval,omitempty"`
	// Keys are public keys from PEM files, each pinned to its algorithm.
	Keys []KeyFile `json:"keys,omitempty"`
}

// KeyFile is one PEM-encoded verification key.
type KeyFile struct {
	// KID is matched against the token header's kid; "" matches a token without one.
	KID string `json:"kid,omitempty"`
	// Alg is the only algorithm this key verifies: EdDSA, ES256, RS256 (public keys) or HS256
	// (a raw shared secret in the file, development only). Required: never inferred from the
	// token.
	Alg string `json:"alg"`
	// File is the PEM file (PKIX public key or certificate), or the HS256 secret file.
	File string `json:"file"`
}

// Duration is a time.Duration written as a Go duration string ("30s") in JSON.
type Duration time.Duration

// UnmarshalJSON reads "30s"-style strings.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"30s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ErrConfig is wrapped by every error in an issuers file.
var ErrConfig = errors.New("authn: invalid issuers file")

// LoadIssuers reads and validates the issuers file at path.
func LoadIssuers(path string) (IssuersFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return IssuersFile{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	var f IssuersFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return IssuersFile{}, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
	}
	seen := map[string]bool{}
	for i := range f.Issuers {
		is := &f.Issuers[i]
		if err := is.validate(); err != nil {
			return IssuersFile{}, fmt.Errorf("%w: %s: issuer %d (%q): %w", ErrConfig, path, i+1, is.Issuer, err)
		}
		if seen[is.Issuer] {
			return IssuersFile{}, fmt.Errorf("%w: %s: issuer %q listed twice", ErrConfig, path, is.Issuer)
		}
		seen[is.Issuer] = true
	}
	if len(f.Issuers) == 0 && f.ConnectWebhook == nil {
		return IssuersFile{}, fmt.Errorf("%w: %s lists no issuer and no connect_webhook", ErrConfig, path)
	}
	if w := f.ConnectWebhook; w != nil {
		if err := w.validate(); err != nil {
			return IssuersFile{}, fmt.Errorf("%w: %s: connect_webhook: %w", ErrConfig, path, err)
		}
	}
	return f, nil
}

func (is *Issuer) validate() error {
	switch {
	case is.Issuer == "":
		return errors.New("issuer is required")
	case is.Tenant != "" && is.TenantClaim != "":
		return errors.New("tenant and tenant_claim are exclusive")
	case is.JWKSURL == "" && len(is.Keys) == 0:
		return errors.New("no key source: set jwks_url or keys")
	case is.Leeway < 0 || time.Duration(is.Leeway) > 5*time.Minute:
		return errors.New("leeway must be within 0..5m")
	case is.JWKSRefresh < 0 || is.JWKSUnknownKIDInterval < 0:
		return errors.New("jwks intervals must not be negative")
	}
	if is.Tenant != "" {
		if _, err := ParseTenant(is.Tenant); err != nil {
			return err
		}
	}
	if is.JWKSURL != "" {
		if err := checkJWKSURL(is.JWKSURL); err != nil {
			return err
		}
	}
	for _, k := range is.Keys {
		if _, ok := algorithms[k.Alg]; !ok {
			return fmt.Errorf("key %q: alg %q is not one of EdDSA, ES256, RS256, HS256", k.KID, k.Alg)
		}
		if k.File == "" {
			return fmt.Errorf("key %q: file is required", k.KID)
		}
	}
	return nil
}

func (w *Webhook) validate() error {
	switch {
	case w.URL == "":
		return errors.New("url is required")
	case w.Timeout < 0 || time.Duration(w.Timeout) > 30*time.Second:
		return errors.New("timeout must be within 0..30s")
	case w.MaxConcurrency < 0 || w.MaxConcurrency > 10_000:
		return errors.New("max_concurrency must be within 0..10000")
	case w.CacheTTL != nil && (*w.CacheTTL < 0 || time.Duration(*w.CacheTTL) > time.Hour):
		return errors.New("cache_ttl must be within 0..1h")
	}
	return checkJWKSURL(w.URL)
}

// checkJWKSURL allows https anywhere and http only on loopback: keys fetched (or identities
// answered) in clear over a network could be swapped by anyone on the path.
func checkJWKSURL(raw string) error {
	if err := CheckSecureURL(raw); err != nil {
		return fmt.Errorf("jwks_url: %w", err)
	}
	return nil
}

// ParseTenant reads a tenant as 32 hex digits or a decimal that fits 64 bits.
func ParseTenant(s string) (contract.TenantID, error) {
	if len(s) == 32 {
		return contract.ParseU128(s)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || strconv.FormatUint(v, 10) != s {
		return contract.TenantID{}, fmt.Errorf("tenant %q: want 32 hex digits or a decimal", s)
	}
	return contract.TenantID{Lo: v}, nil
}

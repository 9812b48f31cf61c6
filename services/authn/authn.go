// Package authn verifies the credential a client presents at AUTH and turns it into the
// identity the gateway serves: (tenant, user, device) and the instant the credential ends.
//
// Three kinds of credential are understood, told apart by their shape (Router):
//   - a JWT (RFC 7519) from an issuer the deployment names in QIM_AUTH_ISSUERS, verified with
//     the issuer's keys: a JWKS URL (cached, refreshed on an unknown kid at a bounded rate) or
//     PEM files, each key pinned to one algorithm (jwt.go, keys.go);
//   - the development token of contract/devtoken, when QIM_TOKEN_SECRET is set (make demo and
//     the gates);
//   - nothing else: an unknown shape or issuer is refused.
//
// Invariants:
//   - Fail closed. Every error is a refusal; only ErrUnavailable (a key source that could not
//     be reached) tells the client to retry rather than to get a new credential.
//   - Identity comes from the verified credential, never from the AuthRequest. A request's
//     device_id only fills a device the credential leaves open (a user-level token).
//   - A credential is never logged or put in an error's text: errors name the check that
//     failed, not the value.
//
// Rejected alternative: one HMAC secret per tenant in the gateway's environment. It gives the
// gateway the power to mint any user's credential, cannot rotate without a restart, and is not
// what a company's identity provider issues.
package authn

import (
	"context"
	"errors"
	"time"

	"github.com/qim-dev/qim/contract"
)

// Identity is who a verified credential says the client is.
type Identity struct {
	Tenant contract.TenantID
	User   contract.UserID
	// Device is the credential's device; "" when the credential is valid for any device of the
	// user, which the AuthRequest's device_id then names.
	Device string
	// ExpiresAt is when the credential stops being valid (zero: it does not say).
	ExpiresAt time.Time
	// IssuedAt is the credential's iat (zero: it does not say).
	IssuedAt time.Time
}

// Credential is what a client presented at AUTH.
type Credential struct {
	Token string // AuthRequest.token: never logged, never put in an error
	// Device, ClientVersion and Remote (the peer's IP address) are passed to a connect webhook,
	// which may decide on them; the token verifiers ignore them.
	Device, ClientVersion, Remote string
}

// Verifier checks one credential. Implementations are safe for concurrent use.
type Verifier interface {
	Verify(ctx context.Context, c Credential) (Identity, error)
}

// The refusals, for callers to branch on (errors.Is). Each wrapping error says which check
// failed; none carries the credential.
var (
	ErrMalformed     = errors.New("authn: malformed credential")
	ErrSignature     = errors.New("authn: signature does not verify")
	ErrExpired       = errors.New("authn: credential expired")
	ErrNotYetValid   = errors.New("authn: credential not yet valid")
	ErrClaims        = errors.New("authn: claims refused")
	ErrUnknownKey    = errors.New("authn: unknown signing key")
	ErrUnknownIssuer = errors.New("authn: unknown issuer")
	ErrUnsupported   = errors.New("authn: credential kind not accepted by this deployment")
	// ErrRejected: the connect webhook refused the credential (401 or 403).
	ErrRejected = errors.New("authn: credential rejected by the connect webhook")
	// ErrUnavailable: the verifier could not reach what it needs (a JWKS URL that has never
	// answered). The client may retry with the same credential.
	ErrUnavailable = errors.New("authn: verification unavailable")
)

// Reason is the metric label of a refusal: one of a small fixed set, never the error's text.
func Reason(err error) string {
	for _, r := range []struct {
		err    error
		reason string
	}{
		{ErrMalformed, "malformed_token"}, {ErrSignature, "bad_signature"}, {ErrExpired, "expired"},
		{ErrNotYetValid, "not_yet_valid"}, {ErrClaims, "bad_claims"}, {ErrUnknownKey, "unknown_key"},
		{ErrUnknownIssuer, "unknown_issuer"}, {ErrUnsupported, "unsupported_token"}, {ErrRejected, "hook_rejected"}, {ErrUnavailable, "verifier_unavailable"},
	} {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return "refused"
}

// ClientMessage is what the client is told of a refusal: the check that failed, never the
// credential or a key source's error text.
func ClientMessage(err error) string {
	switch {
	case errors.Is(err, ErrExpired):
		return "token expired"
	case errors.Is(err, ErrNotYetValid):
		return "token not yet valid"
	case errors.Is(err, ErrUnavailable):
		return "credential verification unavailable, retry later"
	case errors.Is(err, ErrClaims):
		return "token claims refused"
	case errors.Is(err, ErrUnknownIssuer):
		return "token issuer not accepted"
	case errors.Is(err, ErrRejected):
		return "credential rejected"
	}
	return "invalid token"
}

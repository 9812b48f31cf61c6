package authn

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/golang-jwt/jwt/v5"

	"github.com/qim-dev/qim/contract"
)

// Options configure a Router. At least one of DevSecret and Issuers is required.
type Options struct {
	// DevSecret verifies contract/devtoken tokens; nil refuses them (ErrUnsupported).
	DevSecret []byte
	// Issuers are the identity providers whose JWTs are accepted, matched by iss.
	Issuers []Issuer
	// Log receives JWKS refresh failures (never a credential).
	Log *slog.Logger
	// OnJWKSFetch is told the outcome of every JWKS request (may be nil).
	OnJWKSFetch FetchObserver
	// Webhook verifies what no other verifier claims (nil: nothing else is accepted).
	Webhook *Webhook
	// OnHookCall is told each connect-webhook call's outcome and duration (may be nil).
	OnHookCall HookObserver
}

// Router is the gateway's Verifier: it tells a credential's kind by its shape and hands it to
// the verifier of that kind, or of that JWT's issuer.
type Router struct {
	dev     *DevToken
	issuers map[string]*jwtIssuer
	hook    *webhook // nil without a connect webhook
}

// NewRouter builds every verifier; JWKS issuers start their background refresh, which ends with
// ctx. An unreachable JWKS URL does not fail start-up: its tokens are refused until it answers.
func NewRouter(ctx context.Context, o Options) (*Router, error) {
	if len(o.DevSecret) == 0 && len(o.Issuers) == 0 && o.Webhook == nil {
		return nil, fmt.Errorf("%w: no credential is accepted: set QIM_AUTH_ISSUERS or QIM_TOKEN_SECRET", ErrConfig)
	}
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	r := &Router{issuers: map[string]*jwtIssuer{}}
	if len(o.DevSecret) != 0 {
		dev, err := NewDevToken(o.DevSecret)
		if err != nil {
			return nil, fmt.Errorf("%w: QIM_TOKEN_SECRET: %w", ErrConfig, err)
		}
		r.dev = dev
	}
	for _, is := range o.Issuers {
		v, err := newJWTIssuer(ctx, is, log, o.OnJWKSFetch)
		if err != nil {
			return nil, err
		}
		r.issuers[is.Issuer] = v
	}
	if o.Webhook != nil {
		r.hook = newWebhook(*o.Webhook, o.OnHookCall)
	}
	return r, nil
}

// devPrefix starts every dev token (contract/devtoken's format).
const devPrefix = "qim1."

// Verify routes the credential: "qim1." to the dev-token verifier, a JWT to the verifier of its
// (not yet verified) iss — an iss not configured is refused —, and anything else, an opaque
// token, to the connect webhook when there is one. Reading iss before the signature only picks
// which keys to check it with; nothing else of the payload is trusted.
func (r *Router) Verify(ctx context.Context, c Credential) (Identity, error) {
	token := c.Token
	switch {
	case token == "" || len(token) > contract.CredentialMaxBytes:
		return Identity{}, fmt.Errorf("%w: credential of %d bytes, want 1..%d", ErrMalformed, len(token), contract.CredentialMaxBytes)
	case strings.HasPrefix(token, devPrefix):
		if r.dev == nil {
			return Identity{}, fmt.Errorf("%w: dev tokens (QIM_TOKEN_SECRET is unset)", ErrUnsupported)
		}
		return r.dev.verify(ctx, token)
	}
	iss, err := peekIssuer(token)
	switch {
	case err != nil && r.hook != nil:
		return r.hook.verify(ctx, c)
	case err != nil:
		return Identity{}, err
	}
	if v, ok := r.issuers[iss]; ok {
		return v.verify(ctx, token)
	}
	return Identity{}, fmt.Errorf("%w: %q", ErrUnknownIssuer, truncate(iss))
}

// peekIssuer reads a JWT's iss without verifying anything.
func peekIssuer(token string) (string, error) {
	if strings.Count(token, ".") != 2 {
		return "", fmt.Errorf("%w: neither a JWT nor a dev token", ErrMalformed)
	}
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(token, claims); err != nil {
		return "", fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	iss, _ := claims.GetIssuer()
	return iss, nil
}

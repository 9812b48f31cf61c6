package authn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/qim-dev/qim/contract"
)

// defaultLeeway is the clock skew allowed on exp, nbf and iat when the issuer sets none.
const defaultLeeway = 30 * time.Second

// jwtIssuer verifies the JWTs of one issuer.
type jwtIssuer struct {
	cfg    Issuer
	tenant contract.TenantID // the fixed tenant, when cfg.Tenant is set
	static map[string]pinnedKey
	jwks   *jwksKeys
	parser *jwt.Parser
}

func newJWTIssuer(ctx context.Context, is Issuer, log *slog.Logger, observe FetchObserver) (*jwtIssuer, error) {
	v := &jwtIssuer{cfg: is, static: map[string]pinnedKey{}}
	if is.Tenant != "" {
		v.tenant, _ = ParseTenant(is.Tenant) // validated by LoadIssuers
	}
	methods := []string{}
	for _, k := range is.Keys {
		pk, err := loadKey(k)
		if err != nil {
			return nil, fmt.Errorf("%w: issuer %q: %w", ErrConfig, is.Issuer, err)
		}
		v.static[k.KID] = pk
		methods = append(methods, pk.alg)
	}
	if is.JWKSURL != "" {
		j, err := newJWKSKeys(ctx, is, log, observe)
		if err != nil {
			return nil, err
		}
		v.jwks = j
		methods = append(methods, "EdDSA", "ES256", "RS256")
	}
	leeway := time.Duration(is.Leeway)
	if leeway == 0 {
		leeway = defaultLeeway
	}
	opts := []jwt.ParserOption{jwt.WithValidMethods(slices.Compact(slices.Sorted(slices.Values(methods)))),
		jwt.WithLeeway(leeway), jwt.WithIssuer(is.Issuer), jwt.WithExpirationRequired(), jwt.WithIssuedAt()}
	if is.Audience != "" {
		opts = append(opts, jwt.WithAudience(is.Audience))
	}
	v.parser = jwt.NewParser(opts...)
	return v, nil
}

// Verify checks the signature with the pinned key, then exp/nbf/iat, iss and aud, and maps the
// claims to an Identity.
func (v *jwtIssuer) verify(ctx context.Context, token string) (Identity, error) {
	claims := jwt.MapClaims{}
	_, err := v.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) { return v.key(ctx, t) })
	if err != nil {
		return Identity{}, mapJWTError(err)
	}
	return v.identity(claims)
}

// key finds the key a token's kid names: a PEM key first, then the JWKS. The token's alg must
// be the key's own.
func (v *jwtIssuer) key(ctx context.Context, t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	if k, ok := v.static[kid]; ok {
		if k.alg != t.Method.Alg() {
			return nil, fmt.Errorf("%w: token alg %s on a key pinned to %s", ErrSignature, t.Method.Alg(), k.alg)
		}
		return k.key, nil
	}
	if v.jwks == nil {
		return nil, fmt.Errorf("%w: kid %q", ErrUnknownKey, truncate(kid))
	}
	return v.jwks.key(ctx, t)
}

// mapJWTError turns the parser's error into this package's refusals. Our own key errors come
// first: the parser wraps them in ErrTokenUnverifiable.
func mapJWTError(err error) error {
	for _, own := range []error{ErrUnknownKey, ErrSignature, ErrUnavailable} {
		if errors.Is(err, own) {
			return err
		}
	}
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return fmt.Errorf("%w: %w", ErrSignature, err)
	case errors.Is(err, jwt.ErrTokenExpired):
		return fmt.Errorf("%w: %w", ErrExpired, err)
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return fmt.Errorf("%w: %w", ErrNotYetValid, err)
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return fmt.Errorf("%w: %w", ErrSignature, err)
	}
	return fmt.Errorf("%w: %w", ErrClaims, err)
}

// identity maps verified claims: sub is the decimal user id, the tenant is fixed or claimed, the
// device claim is optional.
func (v *jwtIssuer) identity(c jwt.MapClaims) (Identity, error) {
	sub, _ := c.GetSubject()
	user, err := strconv.ParseUint(sub, 10, 64)
	if err != nil || user == 0 {
		return Identity{}, fmt.Errorf("%w: sub must be a user id, a decimal from 1", ErrClaims)
	}
	id := Identity{User: contract.UserID(user), Tenant: v.tenant}
	if name := v.cfg.TenantClaim; name != "" {
		if id.Tenant, err = claimTenant(c[name]); err != nil {
			return Identity{}, fmt.Errorf("%w: claim %q: %w", ErrClaims, name, err)
		}
	}
	name := v.cfg.DeviceClaim
	if name == "" {
		name = "device"
	}
	if raw, ok := c[name]; ok {
		d, ok := raw.(string)
		if !ok || d == "" || len(d) > contract.DeviceIDMaxBytes {
			return Identity{}, fmt.Errorf("%w: claim %q must be a device id of 1..%d bytes", ErrClaims, name, contract.DeviceIDMaxBytes)
		}
		id.Device = d
	}
	if exp, _ := c.GetExpirationTime(); exp != nil {
		id.ExpiresAt = exp.Time
	}
	if iat, _ := c.GetIssuedAt(); iat != nil {
		id.IssuedAt = iat.Time
	}
	return id, nil
}

// claimTenant reads a tenant claim: a string (32 hex digits or a decimal) or a whole number.
func claimTenant(raw any) (contract.TenantID, error) {
	switch t := raw.(type) {
	case string:
		return ParseTenant(t)
	case float64:
		if t < 0 || t != math.Trunc(t) || t > 1<<53 {
			return contract.TenantID{}, errors.New("a numeric tenant must be a whole number below 2^53")
		}
		return contract.TenantID{Lo: uint64(t)}, nil
	case nil:
		return contract.TenantID{}, errors.New("missing")
	}
	return contract.TenantID{}, fmt.Errorf("a %T, want a string or a number", raw)
}

// truncate keeps an attacker-chosen value short enough for an error message.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

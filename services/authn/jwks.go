package authn

import (
	"context"
	"crypto"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// jwksFetchTimeout bounds one JWKS request. An AUTH that names an unknown kid waits for at
// most this long (the refresh it triggers, or the wait for the next allowed one).
const jwksFetchTimeout = 3 * time.Second

// Defaults of the issuer's JWKS knobs.
const (
	defaultJWKSRefresh    = time.Hour
	defaultUnknownKIDWait = 10 * time.Second
)

// jwksKeys is an issuer's remote key set. jwkset holds the cache, re-reads it every
// JWKSRefresh, and on a kid it lacks refreshes at most once per JWKSUnknownKIDInterval; written
// by hand that is JWK parsing and validation for three key types plus a refresh loop, which the
// library has and tests (go-jose parses JWKs too but has no cache or refresh). The checks that
// decide acceptance (alg pinning) stay here, where they are tested.
type jwksKeys struct {
	store jwkset.Storage
}

// FetchObserver is told the outcome of every JWKS request ("ok" or "error"); the gateway counts
// them in qim_gateway_jwks_fetches_total.
type FetchObserver func(outcome string)

func newJWKSKeys(ctx context.Context, is Issuer, log *slog.Logger, observe FetchObserver) (*jwksKeys, error) {
	refresh := time.Duration(is.JWKSRefresh)
	if refresh == 0 {
		refresh = defaultJWKSRefresh
	}
	every := time.Duration(is.JWKSUnknownKIDInterval)
	if every == 0 {
		every = defaultUnknownKIDWait
	}
	client := &http.Client{Transport: countingTransport{next: http.DefaultTransport, observe: observe}, Timeout: jwksFetchTimeout}
	remote, err := jwkset.NewStorageFromHTTP(is.JWKSURL, jwkset.HTTPClientStorageOptions{
		Client: client, Ctx: ctx, HTTPTimeout: jwksFetchTimeout, RefreshInterval: refresh,
		// Start-up does not wait for the provider: its tokens are refused until it answers.
		NoErrorReturnFirstHTTPReq: true,
		RefreshErrorHandler: func(_ context.Context, err error) {
			log.Warn("authn: JWKS refresh failed", "issuer", is.Issuer, "url", is.JWKSURL, "err", err)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("authn: issuer %q: JWKS %s: %w", is.Issuer, is.JWKSURL, err)
	}
	store, err := jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs:          map[string]jwkset.Storage{is.JWKSURL: remote},
		RefreshUnknownKID: rate.NewLimiter(rate.Every(every), 1),
		// The wait for the limiter shares its deadline with the fetch it then makes, so it must
		// leave room for one; a token that would wait longer is refused at once (no queue).
		RateLimitWaitMax: jwksFetchTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("authn: issuer %q: JWKS %s: %w", is.Issuer, is.JWKSURL, err)
	}
	return &jwksKeys{store: store}, nil
}

// key returns the JWKS key the token's kid names. The token's alg must be the key's: its JWK
// "alg" when published, and always the one its type verifies (algFor).
func (j *jwksKeys) key(ctx context.Context, t *jwt.Token) (any, error) {
	kid, ok := t.Header["kid"].(string)
	if !ok {
		return nil, fmt.Errorf("%w: the token names no kid, which a JWKS issuer requires", ErrUnknownKey)
	}
	jwk, err := j.store.KeyRead(ctx, kid)
	if err != nil {
		return nil, fmt.Errorf("%w: kid %q not in the issuer's JWKS", ErrUnknownKey, truncate(kid))
	}
	if a := jwk.Marshal().ALG.String(); a != "" && a != t.Method.Alg() {
		return nil, fmt.Errorf("%w: token alg %s on a JWK published for %s", ErrSignature, t.Method.Alg(), a)
	}
	key := jwk.Key()
	if pk, ok := key.(interface{ Public() crypto.PublicKey }); ok {
		key = pk.Public()
	}
	alg, err := algFor(key)
	if err != nil {
		return nil, fmt.Errorf("%w: JWKS key %q: %w", ErrUnknownKey, truncate(kid), err)
	}
	if alg != t.Method.Alg() {
		return nil, fmt.Errorf("%w: token alg %s on an %s key", ErrSignature, t.Method.Alg(), alg)
	}
	return key, nil
}

// countingTransport reports each request's outcome.
type countingTransport struct {
	next    http.RoundTripper
	observe FetchObserver
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if c.observe != nil {
		outcome := "ok"
		if err != nil || resp.StatusCode != http.StatusOK {
			outcome = "error"
		}
		c.observe(outcome)
	}
	return resp, err
}

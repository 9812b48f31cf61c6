// Package authntest is an identity provider for tests and the gates: it holds signing keys,
// serves their JWKS on a loopback HTTP port, counts the fetches, and signs tokens. It stands in
// for a company's IdP (Auth0, Keycloak, an in-house issuer), which the gateway only ever reaches
// over HTTP, so the gateway under test runs exactly the code it runs in production.
package authntest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// IdP is a test identity provider. Safe for concurrent use.
type IdP struct {
	issuer  string
	srv     *http.Server
	url     string
	fetches atomic.Int64
	failing atomic.Bool
	// The connect webhook (hook.go).
	hookCalls   atomic.Int64
	hookFailing atomic.Bool
	hookDelay   atomic.Int64 // nanoseconds

	mu   sync.Mutex
	keys map[string]key // kid -> key
	n    int
}

type key struct {
	alg    string
	signer crypto.Signer
	public bool // published in the JWKS
}

// New starts an IdP named issuer whose JWKS is served at URL().
func New(issuer string) (*IdP, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("authntest: listen: %w", err)
	}
	p := &IdP{issuer: issuer, keys: map[string]key{}, url: "http://" + ln.Addr().String() + "/jwks.json"}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jwks.json", p.serveJWKS)
	mux.HandleFunc("POST /connect", p.serveHook)
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Issuer is the iss of the tokens Sign makes.
func (p *IdP) Issuer() string { return p.issuer }

// URL is the JWKS URL.
func (p *IdP) URL() string { return p.url }

// Fetches counts the JWKS requests served so far.
func (p *IdP) Fetches() int64 { return p.fetches.Load() }

// SetFailing makes the JWKS URL answer 503 (true) or serve again (false).
func (p *IdP) SetFailing(on bool) { p.failing.Store(on) }

// Close stops the HTTP server.
func (p *IdP) Close() error { return p.srv.Close() }

// AddKey generates a key for alg (EdDSA, ES256, RS256), publishes it in the JWKS unless hidden,
// and returns its kid.
func (p *IdP) AddKey(alg string, hidden bool) (string, error) {
	var s crypto.Signer
	var err error
	switch alg {
	case "EdDSA":
		_, s, err = ed25519.GenerateKey(rand.Reader)
	case "ES256":
		s, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "RS256":
		s, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		return "", fmt.Errorf("authntest: alg %q", alg)
	}
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	kid := alg + "-" + strconv.Itoa(p.n)
	p.keys[kid] = key{alg: alg, signer: s, public: !hidden}
	return kid, nil
}

// Publish shows (or hides) a key in the JWKS: hide the old key after a rotation.
func (p *IdP) Publish(kid string, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if k, ok := p.keys[kid]; ok {
		k.public = on
		p.keys[kid] = k
	}
}

// Sign makes a token with the key kid. The header names kid unless noKID.
func (p *IdP) Sign(kid string, claims jwt.MapClaims, noKID bool) (string, error) {
	p.mu.Lock()
	k, ok := p.keys[kid]
	p.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("authntest: no key %q", kid)
	}
	t := jwt.NewWithClaims(jwt.GetSigningMethod(k.alg), claims)
	if !noKID {
		t.Header["kid"] = kid
	}
	return t.SignedString(k.signer)
}

// PublicKey is the public half of kid (for alg-confusion tests and PEM files).
func (p *IdP) PublicKey(kid string) crypto.PublicKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keys[kid].signer.Public()
}

// WritePublicPEM writes kid's public key as a PKIX PEM file.
func (p *IdP) WritePublicPEM(kid, path string) error {
	der, err := x509.MarshalPKIXPublicKey(p.PublicKey(kid))
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600)
}

// Claims are the usual claims of a token for user on device (device "" leaves it out), valid
// from now for ttl.
func (p *IdP) Claims(user uint64, device string, ttl time.Duration) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{"iss": p.issuer, "sub": strconv.FormatUint(user, 10), "iat": now.Unix(),
		"exp": now.Add(ttl).Unix(), "aud": "qim"}
	if device != "" {
		c["device"] = device
	}
	return c
}

func (p *IdP) serveJWKS(w http.ResponseWriter, r *http.Request) {
	p.fetches.Add(1)
	if p.failing.Load() {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	body, err := p.jwks(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (p *IdP) jwks(ctx context.Context) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	set := jwkset.NewMemoryStorage()
	for kid, k := range p.keys {
		if !k.public {
			continue
		}
		j, err := jwkset.NewJWKFromKey(k.signer.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid, ALG: jwkset.ALG(k.alg), USE: jwkset.UseSig}})
		if err != nil {
			return nil, err
		}
		if err := set.KeyWrite(ctx, j); err != nil {
			return nil, err
		}
	}
	b, err := set.JSONPublic(ctx)
	if err != nil {
		return nil, errors.Join(errors.New("authntest: JWKS"), err)
	}
	return b, nil
}

// Kid is the newest published key of alg ("" when there is none).
func (p *IdP) Kid(alg string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	best, bestN := "", 0
	for kid, k := range p.keys {
		var n int
		if _, err := fmt.Sscanf(kid[len(k.alg)+1:], "%d", &n); err == nil && k.alg == alg && k.public && n > bestN {
			best, bestN = kid, n
		}
	}
	return best
}

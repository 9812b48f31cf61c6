package authn_test

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	"github.com/qim-dev/qim/services/authn"
	"github.com/qim-dev/qim/services/authn/authntest"
)

// fixture is an IdP with one key of each algorithm, published in its JWKS, and a Router that
// trusts it (audience "qim"), plus a PEM-configured second issuer.
type fixture struct {
	idp  *authntest.IdP
	pem  *authntest.IdP // its keys reach the Router only as PEM files
	kids map[string]string
	pemK string
	r    *authn.Router
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{kids: map[string]string{}}
	var err error
	if f.idp, err = authntest.New("https://id.example/"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.idp.Close() })
	for _, alg := range []string{"EdDSA", "ES256", "RS256"} {
		if f.kids[alg], err = f.idp.AddKey(alg, false); err != nil {
			t.Fatal(err)
		}
	}
	if f.pem, err = authntest.New("https://pem.example/"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.pem.Close() })
	if f.pemK, err = f.pem.AddKey("ES256", true); err != nil {
		t.Fatal(err)
	}
	pemFile := filepath.Join(t.TempDir(), "k.pem")
	if err := f.pem.WritePublicPEM(f.pemK, pemFile); err != nil {
		t.Fatal(err)
	}
	f.r = newRouter(t, []byte("dev-secret-0123456789"),
		authn.Issuer{Issuer: f.idp.Issuer(), Audience: "qim", TenantClaim: "tenant", JWKSURL: f.idp.URL(),
			JWKSUnknownKIDInterval: authn.Duration(time.Hour)},
		authn.Issuer{Issuer: f.pem.Issuer(), Tenant: "7", Keys: []authn.KeyFile{{KID: f.pemK, Alg: "ES256", File: pemFile}}})
	return f
}

func newRouter(t testing.TB, dev []byte, issuers ...authn.Issuer) *authn.Router {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r, err := authn.NewRouter(ctx, authn.Options{DevSecret: dev, Issuers: issuers})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *fixture) sign(t *testing.T, idp *authntest.IdP, kid string, edit func(jwt.MapClaims)) string {
	t.Helper()
	c := idp.Claims(42, "phone", time.Hour)
	c["tenant"] = "9"
	if edit != nil {
		edit(c)
	}
	tok, err := idp.Sign(kid, c, false)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Every algorithm logs in through the JWKS, and a PEM key through its file.
func TestJWTAccepted(t *testing.T) {
	f := newFixture(t)
	for alg, kid := range f.kids {
		id, err := f.r.Verify(context.Background(), authn.Credential{Token: f.sign(t, f.idp, kid, nil)})
		if err != nil {
			t.Fatalf("%s: %v", alg, err)
		}
		if id.User != 42 || id.Device != "phone" || id.Tenant != (contract.TenantID{Lo: 9}) || id.ExpiresAt.IsZero() {
			t.Fatalf("%s: identity %+v", alg, id)
		}
	}
	id, err := f.r.Verify(context.Background(), authn.Credential{Token: f.sign(t, f.pem, f.pemK, func(c jwt.MapClaims) { delete(c, "device") })})
	if err != nil || id.Tenant != (contract.TenantID{Lo: 7}) || id.Device != "" {
		t.Fatalf("PEM issuer: %+v, %v", id, err)
	}
}

// Each hostile credential gets its own refusal, and none is accepted.
func TestJWTRefusals(t *testing.T) {
	f := newFixture(t)
	ed, rs := f.kids["EdDSA"], f.kids["RS256"]
	now := time.Now()
	hs := func(key []byte, kid string) string { // HS256 over the RSA key's public bytes: the HS/RS confusion
		tk := jwt.NewWithClaims(jwt.SigningMethodHS256, f.idp.Claims(42, "phone", time.Hour))
		tk.Header["kid"] = kid
		s, err := tk.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	rsaDER, _ := x509.MarshalPKIXPublicKey(f.idp.PublicKey(rs))
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, f.idp.Claims(42, "phone", time.Hour)).SignedString(jwt.UnsafeAllowNoneSignatureType)
	good := f.sign(t, f.idp, ed, nil)
	for _, c := range []struct {
		name  string
		token string
		want  error
	}{
		{"expired", f.sign(t, f.idp, ed, func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() }), authn.ErrExpired},
		{"expiry inside the leeway is accepted", "", nil},
		{"not yet valid", f.sign(t, f.idp, ed, func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() }), authn.ErrNotYetValid},
		{"issued in the future", f.sign(t, f.idp, ed, func(c jwt.MapClaims) { c["iat"] = now.Add(time.Hour).Unix() }), authn.ErrNotYetValid},
		{"no exp", f.sign(t, f.idp, ed, func(c jwt.MapClaims) { delete(c, "exp") }), authn.ErrClaims},
		{"wrong audience", f.sign(t, f.idp, ed, func(c jwt.MapClaims) { c["aud"] = "other" }), authn.ErrClaims},
		{"unknown issuer", f.sign(t, f.idp, ed, func(c jwt.MapClaims) { c["iss"] = "https://evil.example/" }), authn.ErrUnknownIssuer},
		{"sub not a user id", f.sign(t, f.idp, ed, func(c jwt.MapClaims) { c["sub"] = "alice" }), authn.ErrClaims},
		{"sub zero", f.sign(t, f.idp, ed, func(c jwt.MapClaims) { c["sub"] = "0" }), authn.ErrClaims},
		{"tenant missing", f.sign(t, f.idp, ed, func(c jwt.MapClaims) { delete(c, "tenant") }), authn.ErrClaims},
		{"device too long", f.sign(t, f.idp, ed, func(c jwt.MapClaims) { c["device"] = strings.Repeat("d", 65) }), authn.ErrClaims},
		{"alg none", none, authn.ErrSignature},
		{"HS256 with the RSA public key", hs(rsaDER, rs), authn.ErrSignature},
		{"alg swapped to another JWKS key's", swapKID(t, f.sign(t, f.idp, ed, nil), f.kids["ES256"]), authn.ErrSignature},
		{"signature of another key", swapKID(t, f.sign(t, f.idp, f.kids["ES256"], nil), ed), authn.ErrSignature},
		{"tampered payload", tamper(t, good), authn.ErrSignature},
		{"no kid for a JWKS issuer", signNoKID(t, f.idp, ed), authn.ErrUnknownKey},
		{"garbage", "not a token", authn.ErrMalformed},
		{"three dots of garbage", "a.b.c", authn.ErrMalformed},
		{"oversized", good + strings.Repeat("A", contract.CredentialMaxBytes), authn.ErrMalformed},
		{"dev token with a wrong secret", devTok(t, []byte("another-secret-0123456")), authn.ErrSignature},
	} {
		if c.token == "" {
			continue
		}
		id, err := f.r.Verify(context.Background(), authn.Credential{Token: c.token})
		if !errors.Is(err, c.want) {
			t.Errorf("%s: Verify = %+v, %v; want %v", c.name, id, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), c.token) {
			t.Errorf("%s: the error quotes the credential", c.name)
		}
	}
	leeway := f.sign(t, f.idp, ed, func(c jwt.MapClaims) { c["exp"] = now.Add(-5 * time.Second).Unix() })
	if _, err := f.r.Verify(context.Background(), authn.Credential{Token: leeway}); err != nil {
		t.Fatalf("expired 5 s ago, inside the 30 s leeway: %v", err)
	}
}

// A flood of tokens naming made-up kids costs the IdP one JWKS request per interval (an hour
// here), however many arrive; a rotated key is fetched once and then served from the cache.
func TestUnknownKIDFloodAndRotation(t *testing.T) {
	f := newFixture(t)
	if _, err := f.r.Verify(context.Background(), authn.Credential{Token: f.sign(t, f.idp, f.kids["EdDSA"], nil)}); err != nil {
		t.Fatal(err)
	}
	base := f.idp.Fetches()
	rotated, err := f.idp.AddKey("EdDSA", false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the first refreshes (the rotation), the second hits the cache
		if _, err := f.r.Verify(context.Background(), authn.Credential{Token: f.sign(t, f.idp, rotated, nil)}); err != nil {
			t.Fatalf("rotated key, login %d: %v", i, err)
		}
	}
	if got := f.idp.Fetches() - base; got != 1 {
		t.Fatalf("rotation cost %d JWKS fetches, want 1", got)
	}
	hidden, err := f.idp.AddKey("EdDSA", true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		tok := f.sign(t, f.idp, hidden, nil)
		if _, err := f.r.Verify(context.Background(), authn.Credential{Token: swapKID(t, tok, fmt.Sprintf("made-up-%d", i))}); !errors.Is(err, authn.ErrUnknownKey) {
			t.Fatalf("made-up kid %d: %v, want ErrUnknownKey", i, err)
		}
	}
	if got := f.idp.Fetches() - base; got != 1 {
		t.Fatalf("200 made-up kids after a rotation cost %d more JWKS fetches, want 0", got-1)
	}
}

// The dev token still works beside the issuers, and is refused when no secret is configured.
func TestDevTokenRouting(t *testing.T) {
	f := newFixture(t)
	if id, err := f.r.Verify(context.Background(), authn.Credential{Token: devTok(t, []byte("dev-secret-0123456789"))}); err != nil || id.User != 5 {
		t.Fatalf("dev token: %+v, %v", id, err)
	}
	r := newRouter(t, nil, authn.Issuer{Issuer: "x", Keys: f.pemKeys(t)})
	if _, err := r.Verify(context.Background(), authn.Credential{Token: devTok(t, []byte("dev-secret-0123456789"))}); !errors.Is(err, authn.ErrUnsupported) {
		t.Fatalf("dev token without a secret: %v", err)
	}
	if _, err := authn.NewRouter(context.Background(), authn.Options{}); !errors.Is(err, authn.ErrConfig) {
		t.Fatalf("no verifier at all: %v", err)
	}
}

func (f *fixture) pemKeys(t *testing.T) []authn.KeyFile {
	path := filepath.Join(t.TempDir(), "k.pem")
	if err := f.pem.WritePublicPEM(f.pemK, path); err != nil {
		t.Fatal(err)
	}
	return []authn.KeyFile{{KID: f.pemK, Alg: "ES256", File: path}}
}

// A PEM key configured for another algorithm than its type refuses to load.
func TestPEMKeyPinnedToItsType(t *testing.T) {
	f := newFixture(t)
	keys := f.pemKeys(t)
	keys[0].Alg = "RS256"
	_, err := authn.NewRouter(context.Background(), authn.Options{Issuers: []authn.Issuer{{Issuer: "x", Keys: keys}}})
	if !errors.Is(err, authn.ErrConfig) || !strings.Contains(err.Error(), "ES256 key, configured for RS256") {
		t.Fatalf("NewRouter = %v", err)
	}
}

func devTok(t testing.TB, secret []byte) string {
	tok, err := devtoken.Issue(secret, devtoken.Claims{User: 5, Device: "d", ExpiresAtMs: time.Now().Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, "qim1.") {
		t.Fatalf("dev tokens no longer start with the prefix the Router routes on: %q", tok[:5])
	}
	return tok
}

func signNoKID(t *testing.T, idp *authntest.IdP, kid string) string {
	tok, err := idp.Sign(kid, idp.Claims(42, "phone", time.Hour), true)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// swapKID rewrites the header's kid (the signature then covers another header: the check that
// must refuse it is the signature's, or the key lookup's).
func swapKID(t *testing.T, tok, kid string) string {
	parts := strings.Split(tok, ".")
	h, err := jwt.NewParser().DecodeSegment(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	var head map[string]any
	if err := json.Unmarshal(h, &head); err != nil {
		t.Fatal(err)
	}
	head["kid"] = kid
	b, _ := json.Marshal(head)
	parts[0] = base64.RawURLEncoding.EncodeToString(b)
	return strings.Join(parts, ".")
}

func tamper(t *testing.T, tok string) string {
	parts := strings.Split(tok, ".")
	p, _ := jwt.NewParser().DecodeSegment(parts[1])
	p = []byte(strings.Replace(string(p), `"sub":"42"`, `"sub":"43"`, 1))
	parts[1] = base64.RawURLEncoding.EncodeToString(p)
	return strings.Join(parts, ".")
}

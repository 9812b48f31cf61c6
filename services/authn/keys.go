package authn

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"

	"github.com/golang-jwt/jwt/v5"
)

// algorithms are the JWS algorithms a key may be pinned to. Others (none, HS384, PS256, …) are
// refused by the parser before any key is looked up.
var algorithms = map[string]jwt.SigningMethod{
	"EdDSA": jwt.SigningMethodEdDSA,
	"ES256": jwt.SigningMethodES256,
	"RS256": jwt.SigningMethodRS256,
	"HS256": jwt.SigningMethodHS256,
}

// minRSABits is the smallest RSA modulus accepted; shorter keys are factorable.
const minRSABits = 2048

// algFor is the one algorithm a key verifies, from its type: a JWKS entry without "alg" is
// pinned by this, so an RSA key cannot verify an HS256 token (the HS/RS confusion) and a P-256
// key nothing but ES256.
func algFor(key any) (string, error) {
	switch k := key.(type) {
	case ed25519.PublicKey:
		return "EdDSA", nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return "", fmt.Errorf("ECDSA key on %s, want P-256", k.Curve.Params().Name)
		}
		return "ES256", nil
	case *rsa.PublicKey:
		if k.N.BitLen() < minRSABits {
			return "", fmt.Errorf("RSA key of %d bits, want at least %d", k.N.BitLen(), minRSABits)
		}
		return "RS256", nil
	case []byte:
		return "HS256", nil
	}
	return "", fmt.Errorf("unsupported key type %T", key)
}

// pinnedKey is a key with the algorithm it may verify.
type pinnedKey struct {
	alg string
	key any
}

// loadKey reads one KeyFile: a PKIX public key or a certificate in PEM, or for HS256 the secret
// bytes. The key's type must fit the configured alg.
func loadKey(k KeyFile) (pinnedKey, error) {
	b, err := os.ReadFile(k.File)
	if err != nil {
		return pinnedKey{}, err
	}
	if k.Alg == "HS256" {
		if len(b) < 32 {
			return pinnedKey{}, fmt.Errorf("key %q: HS256 secret of %d bytes, want at least 32", k.KID, len(b))
		}
		return pinnedKey{alg: "HS256", key: b}, nil
	}
	key, err := parsePublicPEM(b)
	if err != nil {
		return pinnedKey{}, fmt.Errorf("key %q (%s): %w", k.KID, k.File, err)
	}
	alg, err := algFor(key)
	if err != nil {
		return pinnedKey{}, fmt.Errorf("key %q (%s): %w", k.KID, k.File, err)
	}
	if alg != k.Alg {
		return pinnedKey{}, fmt.Errorf("key %q (%s) is an %s key, configured for %s", k.KID, k.File, alg, k.Alg)
	}
	return pinnedKey{alg: alg, key: key}, nil
}

func parsePublicPEM(b []byte) (any, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	switch block.Type {
	case "PUBLIC KEY":
		return x509.ParsePKIXPublicKey(block.Bytes)
	case "CERTIFICATE":
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		return cert.PublicKey, nil
	}
	return nil, fmt.Errorf("PEM block %q, want PUBLIC KEY or CERTIFICATE (never a private key)", block.Type)
}

// CheckSecureURL accepts an https URL, or an http one on loopback (a stand-in on the same host):
// whatever is sent to the endpoint — keys, identities, device tokens, message bodies — must not
// cross a network in clear. The error names the URL without its credentials.
func CheckSecureURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return err
	case u.Scheme == "https" && u.Host != "":
		return nil
	case u.Scheme == "http" && IsLoopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%q: want https (http only on loopback)", u.Redacted())
}

// IsLoopback reports whether host names this machine: "localhost" or a loopback IP.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

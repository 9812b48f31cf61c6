// Package devtoken is the signed development token the gateway accepts at AUTH and that
// `qimctl token issue`, the SDK tests and the load generator mint. It is a contract between
// those programs, hence its place beside contract/: changing the format breaks every client.
//
// Format: "qim1." ‖ base64url(payload) ‖ "." ‖ base64url(HMAC-SHA256(secret, "qim1." ‖ base64url(payload)))
// with payload = tenant_id(16) ‖ user_id(8, BE) ‖ expires_at_ms(8, BE) ‖ len(device)(1) ‖ device.
//
// A token is a bearer secret: never log it (log obs.SecretDigest of it), never put it in a path.
// Production deployments put a real identity provider in front; this format only proves that
// whoever holds the shared secret issued the token.
package devtoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/qim-dev/qim/contract"
)

const prefix = "qim1."

// MinSecretBytes is the shortest accepted signing secret.
const MinSecretBytes = 16

// Claims are what a token asserts.
type Claims struct {
	Tenant      contract.TenantID
	User        contract.UserID
	Device      string // 1..64 bytes
	ExpiresAtMs int64
}

var (
	ErrMalformed    = errors.New("devtoken: malformed token")
	ErrBadSignature = errors.New("devtoken: bad signature")
	ErrExpired      = errors.New("devtoken: token expired")
	ErrWeakSecret   = fmt.Errorf("devtoken: signing secret shorter than %d bytes", MinSecretBytes)
	// ErrInvalidClaims: Issue was asked to sign claims no token may carry; the message says which.
	ErrInvalidClaims = errors.New("devtoken: invalid claims")
)

var enc = base64.RawURLEncoding

// Issue signs claims with secret.
func Issue(secret []byte, c Claims) (string, error) {
	if len(secret) < MinSecretBytes {
		return "", ErrWeakSecret
	}
	switch {
	case c.User == 0:
		return "", fmt.Errorf("%w: user id 0 (user ids start at 1)", ErrInvalidClaims)
	case len(c.Device) == 0 || len(c.Device) > contract.DeviceIDMaxBytes:
		return "", fmt.Errorf("%w: device id of %d bytes, want 1..%d", ErrInvalidClaims, len(c.Device), contract.DeviceIDMaxBytes)
	case c.ExpiresAtMs <= 0:
		return "", fmt.Errorf("%w: expiry %d ms, want a positive Unix time", ErrInvalidClaims, c.ExpiresAtMs)
	}
	p := c.Tenant.AppendBytes(make([]byte, 0, 33+len(c.Device)))
	p = binary.BigEndian.AppendUint64(p, uint64(c.User))
	p = binary.BigEndian.AppendUint64(p, uint64(c.ExpiresAtMs))
	p = append(p, byte(len(c.Device)))
	p = append(p, c.Device...)
	head := prefix + enc.EncodeToString(p)
	return head + "." + enc.EncodeToString(sign(secret, head)), nil
}

func sign(secret []byte, head string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(head))
	return m.Sum(nil)
}

// Verify checks the signature (constant time) and expiry against nowMs and returns the claims.
func Verify(secret []byte, token string, nowMs int64) (Claims, error) {
	if len(secret) < MinSecretBytes {
		return Claims{}, ErrWeakSecret
	}
	if !strings.HasPrefix(token, prefix) {
		return Claims{}, ErrMalformed
	}
	dot := strings.LastIndexByte(token, '.')
	if dot <= len(prefix) {
		return Claims{}, ErrMalformed
	}
	head, sigPart := token[:dot], token[dot+1:]
	sig, err := enc.DecodeString(sigPart)
	if err != nil || !hmac.Equal(sig, sign(secret, head)) {
		return Claims{}, ErrBadSignature
	}
	p, err := enc.DecodeString(head[len(prefix):])
	if err != nil || len(p) < 34 || int(p[32]) != len(p)-33 {
		return Claims{}, ErrMalformed
	}
	tenant, _ := contract.U128FromBytes(p[:16])
	c := Claims{Tenant: tenant, User: contract.UserID(binary.BigEndian.Uint64(p[16:24])),
		ExpiresAtMs: int64(binary.BigEndian.Uint64(p[24:32])), Device: string(p[33:])}
	if c.User == 0 || c.Device == "" {
		return Claims{}, ErrMalformed
	}
	if nowMs >= c.ExpiresAtMs {
		return Claims{}, ErrExpired
	}
	return c, nil
}

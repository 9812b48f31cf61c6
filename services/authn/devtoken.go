package authn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract/devtoken"
)

// DevToken verifies contract/devtoken tokens signed with one shared secret. It exists for
// `make demo`, the SDK tests and the gates; a product wires its identity provider as an issuer.
type DevToken struct {
	secret []byte
	now    func() time.Time
}

// NewDevToken returns the dev-token verifier; the secret must hold devtoken.MinSecretBytes.
func NewDevToken(secret []byte) (*DevToken, error) {
	if len(secret) < devtoken.MinSecretBytes {
		return nil, devtoken.ErrWeakSecret
	}
	return &DevToken{secret: secret, now: time.Now}, nil
}

// Verify checks the token's signature and expiry.
func (d *DevToken) verify(_ context.Context, token string) (Identity, error) {
	c, err := devtoken.Verify(d.secret, token, d.now().UnixMilli())
	switch {
	case errors.Is(err, devtoken.ErrExpired):
		return Identity{}, fmt.Errorf("%w: dev token", ErrExpired)
	case errors.Is(err, devtoken.ErrBadSignature):
		return Identity{}, fmt.Errorf("%w: dev token", ErrSignature)
	case err != nil:
		return Identity{}, fmt.Errorf("%w: dev token", ErrMalformed)
	}
	return Identity{Tenant: c.Tenant, User: c.User, Device: c.Device, ExpiresAt: time.UnixMilli(c.ExpiresAtMs)}, nil
}

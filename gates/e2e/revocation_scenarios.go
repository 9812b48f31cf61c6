package e2e

import (
	"context"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/authn/revocation"
)

// revocationBound is the acceptance bound of issue 37: a revoked device's live session ends
// within a second of the revocation.
const revocationBound = time.Second

// A device revoked while online — on the last gateway, so with --instances 2 on another gateway
// than the one the scenarios mostly use — gets KICKED LOGGED_OUT within a second; the user's
// other device stays; the old token is refused ("credential revoked"); a token issued after the
// revocation logs the device in again.
func scenarioRevocation(ctx context.Context, e *Env) error {
	if e.RedisCore == "" {
		return fmt.Errorf("%w: needs the core Redis address", ErrSkipped)
	}
	rdb, err := e.redisCore()
	if err != nil {
		return err
	}
	defer rdb.Close()
	gw, u, kid := e.Gateways[len(e.Gateways)-1], e.User(), e.idp().Kid("EdDSA")
	issued := func(at time.Time) func(jwt.MapClaims) { return func(c jwt.MapClaims) { c["iat"] = at.Unix() } }
	old, err := e.JWT(kid, u, "revoked-phone", issued(time.Now().Add(-10*time.Second)))
	if err != nil {
		return err
	}
	victim, _, err := e.authAt(ctx, gw, old, "")
	if err != nil {
		return fmt.Errorf("the device's login: %w", err)
	}
	defer victim.Close()
	other, err := e.loginJWT(ctx, gw, kid, u, "other-phone")
	if err != nil {
		return err
	}
	defer other.Close()
	r := revocation.Revocation{Tenant: e.Tenant, User: u, Device: "revoked-phone", NotBefore: time.Now()}
	defer func() { _ = revocation.Lift(context.WithoutCancel(ctx), rdb, r) }()
	start := time.Now()
	if err := revocation.Revoke(ctx, rdb, r); err != nil {
		return err
	}
	if err := expectRevokedKick(victim, start); err != nil {
		return err
	}
	if _, err := other.Ping(ctx); err != nil {
		return fmt.Errorf("the user's other device lost its session: %w", err)
	}
	if _, _, err := e.authAt(ctx, gw, old, ""); !isServerError(err, contract.ErrCodeUnauthorized, "credential revoked") {
		return fmt.Errorf("the revoked token: %v, want UNAUTHORIZED \"credential revoked\"", err)
	}
	fresh, err := e.JWT(kid, u, "revoked-phone", issued(r.NotBefore.Truncate(time.Second).Add(time.Second)))
	if err != nil {
		return err
	}
	again, _, err := e.authAt(ctx, gw, fresh, "")
	if err != nil {
		return fmt.Errorf("a token issued after the revocation: %w", err)
	}
	return again.Close()
}

// expectRevokedKick waits for KICKED LOGGED_OUT on c and holds it to revocationBound from
// start (the 10 s wait is a hang guard).
func expectRevokedKick(c *Client, start time.Time) error {
	return expectKick(c, start, contract.KickLoggedOut)
}

// expectKick waits for KICKED with reason within revocationBound of start.
func expectKick(c *Client, start time.Time, reason contract.KickReason) error {
	select {
	case k := <-c.Kicked():
		if took := time.Since(start); contract.KickReason(k.GetReason()) != reason || took > revocationBound {
			return fmt.Errorf("KICKED %s after %s, want %s within %s", contract.KickReason(k.GetReason()), took, reason, revocationBound)
		}
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("no KICKED %s 10 s after the call", reason)
	}
}

package e2e

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/authn/authntest"
)

// The connect webhook decides on opaque tokens: its 200 is the identity (and the session ends at
// its expires_at like a JWT's), its 403 is UNAUTHORIZED, and while it is down a login it has not
// answered before is UNAVAILABLE — never admitted —, while one it answered within the cache TTL
// still gets in.
func scenarioWebhook(ctx context.Context, e *Env) error {
	idp, u := e.idp(), e.User()
	tok := authntest.HookToken(uint64(u), e.Tenant.Lo, "", time.Hour)
	auth := func(token, device string) (*Client, error) {
		c, ok, err := e.authAt(ctx, e.GatewayOf(u), token, device)
		if err == nil && ok.GetUserId() != uint64(u) {
			c.Close()
			return nil, fmt.Errorf("AUTH_OK names user %d, the hook %d", ok.GetUserId(), u)
		}
		return c, err
	}
	c, err := auth(tok, "hooked")
	if err != nil {
		return fmt.Errorf("a token the hook accepts: %w", err)
	}
	c.Close()
	if _, err := auth("hook-deny:"+tok, "hooked"); !isServerError(err, contract.ErrCodeUnauthorized, "credential rejected") {
		return fmt.Errorf("a token the hook refuses: %v, want UNAUTHORIZED \"credential rejected\"", err)
	}
	idp.SetHookFailing(true)
	defer idp.SetHookFailing(false)
	fresh := authntest.HookToken(uint64(u), e.Tenant.Lo, "", 2*time.Hour)
	if _, err := auth(fresh, "hooked"); !isServerError(err, contract.ErrCodeUnavailable, "credential verification unavailable, retry later") {
		return fmt.Errorf("a new token while the hook is down: %v, want UNAVAILABLE", err)
	}
	if c, err = auth(tok, "hooked"); err != nil {
		return fmt.Errorf("a token the hook answered within the cache TTL, while it is down: %w", err)
	}
	return c.Close()
}

func isServerError(err error, code contract.ErrorCode, msg string) bool {
	var se *ServerError
	return errors.As(err, &se) && se.Code == code && se.Msg == msg
}

// floodFrom is the source address of the AUTH flood.
const floodFrom = "127.0.0.2"

// A flood of failing AUTHs from one address is answered RATE_LIMITED once the address has spent
// its failures — a valid token from it too, before any verification — while another address
// logs in as usual. The flood is far above the default burst (30) and sent faster than the
// default refill (1 s), so a limit that does not hold lets UNAUTHORIZED through to the end.
func scenarioAuthFlood(ctx context.Context, e *Env) error {
	const flood = 200
	limited := 0
	for i := range flood {
		c, err := DialFrom(ctx, e.Gateway, floodFrom)
		if err != nil {
			return err
		}
		_, err = c.Auth(ctx, fmt.Sprintf("qim1.forged-%d.token", i), "", 0)
		c.Close()
		switch {
		case isCode(err, contract.ErrCodeRateLimited):
			limited++
		case !isCode(err, contract.ErrCodeUnauthorized):
			return fmt.Errorf("forged AUTH %d: %v, want UNAUTHORIZED or RATE_LIMITED", i, err)
		}
	}
	if limited < flood/2 {
		return fmt.Errorf("%d of %d forged AUTHs from one address were RATE_LIMITED, want most of them", limited, flood)
	}
	u := e.User()
	c, err := DialFrom(ctx, e.Gateway, floodFrom)
	if err != nil {
		return err
	}
	_, err = c.Auth(ctx, e.Token(u, "flooded"), "", 0)
	c.Close()
	if !isCode(err, contract.ErrCodeRateLimited) {
		return fmt.Errorf("a valid token from the flooding address: %v, want RATE_LIMITED", err)
	}
	ok, _, err := e.LoginAt(ctx, e.Gateway, u, "elsewhere", 0)
	if err != nil {
		return fmt.Errorf("the same user from another address: %w", err)
	}
	return ok.Close()
}

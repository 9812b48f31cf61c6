package gateway

// Revocations (services/authn/revocation): every AUTH reads the core Redis's revocation of its
// user and device, and a follower of the revocation channel kicks the live sessions a new one
// covers with KICKED{LOGGED_OUT}. The hash is the durable check; the channel only makes live
// sessions end within a round trip. The same subscription carries kicks (KICKED_BY_ADMIN), which
// end sessions without refusing their credentials.

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/authn"
	"github.com/qim-dev/qim/services/authn/revocation"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// revocationRetry is the pause before subscribing again after the channel failed.
const revocationRetry = time.Second

// checkRevoked refuses a credential a revocation covers. The read is bounded by BackendTimeout;
// a Redis that does not answer is UNAVAILABLE, never an admission.
func (s *Service) checkRevoked(ctx context.Context, id authn.Identity) *authError {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.BackendTimeout)
	defer cancel()
	nb, err := revocation.NotBefore(ctx, s.rdb, id.Tenant, id.User, id.Device)
	if err != nil {
		s.log.Warn("gateway: revocation read failed", "err", err)
		return &authError{reason: "redis_unavailable", err: err}
	}
	if revocation.Covers(nb, id.IssuedAt) {
		return &authError{reason: "revoked", err: rpc.Refuse(contract.ErrCodeUnauthorized, "credential revoked")}
	}
	return nil
}

// followRevocations subscribes to the revocation and kick channels until ctx ends. Each (re)subscription
// re-checks every live session, since changes published while it was not subscribed were missed.
func (s *Service) followRevocations(ctx context.Context) error {
	ps := s.rdb.Subscribe(ctx, revocation.Channel, revocation.KickChannel)
	// Receive blocks in a socket read that ctx does not interrupt; closing the subscription does.
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	defer stop()
	defer ps.Close()
	for {
		msg, err := ps.Receive(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			s.log.Warn("gateway: revocation channel failed; subscribing again", "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(revocationRetry):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Channel == revocation.Channel {
				s.recheckSessions(ctx)
			}
		case *redis.Message:
			s.onRevocationMessage(m)
		}
	}
}

func (s *Service) onRevocationMessage(m *redis.Message) {
	if m.Channel == revocation.KickChannel {
		k, err := revocation.DecodeKick(m.Payload)
		if err != nil {
			s.log.Warn("gateway: bad kick message", "err", err)
			return
		}
		s.applyKick(k)
		return
	}
	r, err := revocation.Decode(m.Payload)
	if err != nil {
		s.log.Warn("gateway: bad revocation message", "err", err)
		return
	}
	s.applyRevocation(r)
}

// applyKick ends the live sessions k covers with KICKED{KICKED_BY_ADMIN}.
func (s *Service) applyKick(k revocation.Kick) {
	for _, ss := range s.registry.appendSessions(nil, userKey{k.Tenant, k.User}) {
		if k.Covers(ss.device) {
			go ss.conn.kick(contract.KickByAdmin, "an operator ended the session", 0)
		}
	}
}

// applyRevocation kicks the live sessions r covers.
func (s *Service) applyRevocation(r revocation.Revocation) {
	for _, ss := range s.registry.appendSessions(nil, userKey{r.Tenant, r.User}) {
		if (r.Device == revocation.AllDevices || ss.device == r.Device) && revocation.Covers(r.NotBefore, ss.issuedAt) {
			s.revokeConn(ss.conn)
		}
	}
}

// recheckSessions reads the revocation of every live session and kicks those covered. One read
// per session, sequentially: it runs at subscription only, off every request path.
func (s *Service) recheckSessions(ctx context.Context) {
	for _, ss := range s.registry.appendAll(nil) {
		rctx, cancel := context.WithTimeout(ctx, s.cfg.BackendTimeout)
		nb, err := revocation.NotBefore(rctx, s.rdb, ss.key.tenant, ss.key.user, ss.device)
		cancel()
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Warn("gateway: revocation re-check failed", "err", err)
			continue
		}
		if revocation.Covers(nb, ss.issuedAt) {
			s.revokeConn(ss.conn)
		}
	}
}

// revokeConn ends a revoked session: KICKED{LOGGED_OUT}, which tells the client not to
// reconnect without a new sign-in (the Go SDK stops and fails its pending sends). kick runs on a
// goroutine of its own, as in watchExpiry.
func (s *Service) revokeConn(c *conn) {
	s.m.revocationsApplied.Inc()
	go c.kick(contract.KickLoggedOut, "the credential was revoked", 0)
}

package gateway

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/authn"
	"github.com/qim-dev/qim/services/authn/revocation"
	"github.com/qim-dev/qim/services/internal/keyfamily"
	"github.com/qim-dev/qim/services/internal/obs"
	"github.com/qim-dev/qim/services/internal/rpc"
	"github.com/qim-dev/qim/wire"
)

// authError is a refused AUTH: reason is the metric label; err is what the client is told,
// through rpc.CodeOf and rpc.ClientMessage (a refusal's own code and text, or UNAVAILABLE for a
// dependency that failed, never that dependency's error text).
type authError struct {
	reason string
	err    error
	kick   bool // answer KICKED{REPLACED} instead of ERROR: a newer login owns the device
}

func (e *authError) Error() string {
	return "gateway: auth refused (" + e.reason + "): " + e.err.Error()
}

func (e *authError) Unwrap() error { return e.err }

func unauthorized(reason, msg string) *authError {
	return &authError{reason: reason, err: rpc.Refuse(contract.ErrCodeUnauthorized, "%s", msg)}
}

// authenticate runs the AUTH handshake: the first frame, within AuthTimeout, must be a valid
// AUTH. On success the session is registered (an older login of the device is kicked) and AUTH_OK
// is written. Any failure answers ERROR and reports false: the connection closes, because an
// unauthenticated socket has nothing else it may do.
func (c *conn) authenticate() bool {
	cfg := &c.s.cfg
	// The connection is in the drain's list from admitConn on, before this goroutine runs: a
	// kick may have expired the read deadline already, and the line above would undo that, so
	// the cancellation is checked after it (as readLoop does).
	_ = c.nc.SetReadDeadline(time.Now().Add(cfg.AuthTimeout))
	if c.ctx.Err() != nil {
		return false
	}
	m, err := c.r.ReadMessage()
	if err != nil {
		c.readFailed(err, true)
		return false
	}
	ok, aerr := c.admit(m)
	if aerr != nil {
		c.s.m.authFailures.WithLabelValues(aerr.reason).Inc()
		c.s.log.Debug("gateway: auth refused", "reason", aerr.reason, "transport", c.transport)
		if aerr.kick {
			c.finalKick(contract.KickReplaced, rpc.ClientMessage(aerr))
		} else {
			c.finalError(m.RequestID, m.Opcode, rpc.CodeOf(aerr), rpc.ClientMessage(aerr))
		}
		return false
	}
	// Counted before AUTH_OK is written: a client that holds AUTH_OK can rely on the counter
	// already including its login (a login whose AUTH_OK write then fails was still granted).
	c.s.m.auths.Inc()
	return c.reply(contract.OpAuthOK, m.RequestID, ok)
}

// admit validates the AUTH frame, asks the mailbox about offline data, assigns the
// session_epoch and registers the session.
func (c *conn) admit(m wire.Message) (*qimv1.AuthOk, *authError) {
	if m.Opcode != contract.OpAuth {
		return nil, unauthorized("not_auth", "the first frame must be AUTH")
	}
	var req qimv1.AuthRequest
	if err := proto.Unmarshal(m.Payload, &req); err != nil {
		return nil, unauthorized("malformed", "malformed AuthRequest")
	}
	ip := remoteIP(c.nc)
	if c.s.authLimit.blocked(ip) {
		return nil, &authError{reason: "rate_limited", err: rpc.Refuse(contract.ErrCodeRateLimited, "too many failed logins from this address; retry later")}
	}
	claims, aerr := c.s.verifyToken(c.ctx, &req, ip)
	if aerr != nil {
		if rpc.CodeOf(aerr) == contract.ErrCodeUnauthorized {
			c.s.authLimit.failed(ip)
		}
		return nil, aerr
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.s.cfg.BackendTimeout)
	defer cancel()
	tenant := claims.Tenant.Bytes()
	offline, err := c.s.mailboxFor(claims.Tenant, claims.User).client.HasOffline(ctx, &internalv1.OfflineQuery{TenantId: tenant[:], UserId: uint64(claims.User),
		DeviceId: claims.Device, Cursor: req.GetLastMailboxCursor().GetMailboxSeq()})
	if err != nil {
		// Never guess has_offline_data: a false "no" would leave the device without its backlog.
		c.s.log.Warn("gateway: mailbox HasOffline failed", "err", err)
		return nil, &authError{reason: "mailbox_unavailable", err: err}
	}
	end := c.s.registry.beginAdmission(userKey{claims.Tenant, claims.User}, claims.Device)
	defer end()
	epoch, err := c.s.nextSessionEpoch(ctx, claims)
	if err != nil {
		c.s.log.Warn("gateway: session_epoch INCR failed", "err", err)
		return nil, &authError{reason: "redis_unavailable", err: err}
	}
	if aerr := c.register(claims, epoch); aerr != nil {
		return nil, aerr
	}
	cfg := &c.s.cfg
	return &qimv1.AuthOk{
		UserId: uint64(claims.User), SessionEpoch: epoch, HeartbeatIntervalMs: uint32(cfg.HeartbeatInterval / time.Millisecond),
		HasOfflineData: offline.GetHasOfflineData(), ServerTimeMs: time.Now().UnixMilli(),
		HeartbeatTimeoutMs: uint32(cfg.HeartbeatTimeout / time.Millisecond),
	}, nil
}

// verifyToken verifies the credential (authn: a JWT of a configured issuer or a dev token) and
// settles the device: the credential's, which the request's device_id may only repeat, or for a
// user-level credential the request's. Identity never comes from what the client asserts alone.
func (s *Service) verifyToken(ctx context.Context, req *qimv1.AuthRequest, remote string) (authn.Identity, *authError) {
	id, err := s.auth.Verify(ctx, authn.Credential{Token: req.GetToken(), Device: req.GetDeviceId(),
		ClientVersion: req.GetClientVersion(), Remote: remote})
	if err != nil {
		s.log.Debug("gateway: credential refused", "reason", authn.Reason(err), "err", err, "token", obs.SecretDigest(req.GetToken()))
		if errors.Is(err, authn.ErrUnavailable) {
			return id, &authError{reason: authn.Reason(err), err: rpc.Refuse(contract.ErrCodeUnavailable, "%s", authn.ClientMessage(err))}
		}
		return id, unauthorized(authn.Reason(err), authn.ClientMessage(err))
	}
	if t := req.GetTenantId(); len(t) != 0 {
		if tenant, err := contract.U128FromBytes(t); err != nil || tenant != id.Tenant {
			return id, unauthorized("tenant_mismatch", "tenant_id does not match the token")
		}
	}
	d := req.GetDeviceId()
	switch {
	case id.Device == "" && (d == "" || len(d) > contract.DeviceIDMaxBytes):
		return id, unauthorized("device_missing", fmt.Sprintf("the token names no device: device_id of 1..%d bytes is required", contract.DeviceIDMaxBytes))
	case id.Device == "":
		id.Device = d
	case d != "" && d != id.Device:
		return id, unauthorized("device_mismatch", "device_id does not match the token")
	}
	if aerr := s.checkRevoked(ctx, id); aerr != nil {
		return id, aerr
	}
	return id, nil
}

// register publishes the session. A login of the same device that is already live is replaced
// (kicked); if that one holds a NEWER epoch, this login lost a race and is refused instead.
func (c *conn) register(claims authn.Identity, epoch uint64) *authError {
	tenant := claims.Tenant.Bytes()
	c.tenantBytes = tenant[:]
	c.pushQ = make(chan []byte, c.s.cfg.PushQueueDepth)
	c.roomQ = make(chan outFrame, roomQueueFrames)
	c.ctrlQ = make(chan outFrame, ctrlQueueDepth)
	c.permits = make(chan struct{}, c.s.cfg.SendInflight)
	c.sendBucket = c.s.sendLimit.Conn(claims.Tenant)
	c.typingLimit = rate.NewLimiter(contract.TypingPerSecond, contract.TypingBurst)
	c.hb = newBeat(c.s.cfg.HeartbeatInterval, c.s.cfg.HeartbeatTimeout, !c.s.cfg.HeartbeatFixed, time.Now())
	sess := &session{key: userKey{claims.Tenant, claims.User}, device: claims.Device, epoch: epoch, conn: c, issuedAt: claims.IssuedAt}
	c.expiresAt = claims.ExpiresAt
	old, err := c.s.registry.register(sess)
	if err != nil {
		c.s.m.kicks.WithLabelValues("replaced").Inc()
		return &authError{reason: "superseded", err: rpc.Refuse(contract.ErrCodeUnauthorized, "a newer login of this device is active"), kick: true}
	}
	c.sess = sess
	if old != nil {
		c.s.kickAsync(old.conn, contract.KickReplaced, "replaced by a newer login of this device", 0)
	}
	if c.s.presence != nil {
		c.s.presence.publish(c.ctx, sess, true)
	}
	return nil
}

// sessionEpochKeyPrefix starts the core-Redis key of a device's session_epoch counter:
// qim:sess:<tenant 32 hex>:<user decimal>:<device>. The device comes last, so a ':' inside a
// device id cannot make two devices share a key.
const sessionEpochKeyPrefix = "qim:sess:"

// appendSessionEpochKey appends the counter key of (tenant, user, device) to dst.
func appendSessionEpochKey(dst []byte, tenant contract.TenantID, user contract.UserID, device string) []byte {
	b := tenant.Bytes()
	dst = append(dst, sessionEpochKeyPrefix...)
	dst = hex.AppendEncode(dst, b[:])
	dst = append(dst, ':')
	dst = strconv.AppendUint(dst, uint64(user), 10)
	dst = append(dst, ':')
	return append(dst, device...)
}

// KeyFamilies declares the keys the gateway writes (core Redis), for the redis-artifacts gate
// (inspect.RedisKeyFamilies).
func KeyFamilies() []keyfamily.Family {
	return []keyfamily.Family{
		keyfamily.New("gateway.session_epoch", keyfamily.Core, "qim:sess:<tenant>:<user>:<device>", sessionEpochKeyPrefix,
			`[0-9a-f]{32}:[0-9]+:(?s:.+)`).
			WithExample(string(appendSessionEpochKey(nil, contract.TenantID{Lo: 1}, 2, "phone"))).
			Permanent("a device's session_epoch counter: expired, it would restart at 1 and an old session would look newer"),
		keyfamily.New("gateway.revocation", keyfamily.Core, "qim:revoke:<tenant>:<user>", revocation.KeyPrefix, `[0-9a-f]{32}:[0-9]+`).
			WithExample(revocation.Key(contract.TenantID{Lo: 1}, 2)).
			Permanent("credentials issued before a time are refused for as long as they may live, which only their issuer knows"),
		keyfamily.New("gateway.presence_boot", keyfamily.Core, "qim:gwboot:<push addr>", bootKeyPrefix, `(?s:.+)`).
			WithExample(bootKeyPrefix + "10.0.0.7:7103").
			Permanent("a Push address's start counter (ADR-0027): restarted at 1, a new start's entries would look older than a crashed start's"),
	}
}

// nextSessionEpoch assigns the session_epoch of a new login: INCR of the device's counter, so
// it only ever moves forward, across gateways and restarts. The key has no TTL on purpose: an
// expiring counter would restart at 1 and let an old session's frames look newer than a live one.
func (s *Service) nextSessionEpoch(ctx context.Context, claims authn.Identity) (uint64, error) {
	key := appendSessionEpochKey(make([]byte, 0, 64+len(claims.Device)), claims.Tenant, claims.User, claims.Device)
	n, err := s.rdb.Incr(ctx, string(key)).Result()
	if err != nil {
		return 0, fmt.Errorf("gateway: session_epoch INCR: %w", err)
	}
	if n <= 0 {
		return 0, fmt.Errorf("gateway: session_epoch counter is %d, not positive", n)
	}
	return uint64(n), nil
}

// remoteIP is the peer's address without the port, for the connect webhook and the AUTH limit
// ("" when the transport has none).
func remoteIP(nc net.Conn) string {
	a := nc.RemoteAddr()
	if a == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// Env is what a scenario runs against: a running deployment on a real stack.
type Env struct {
	Gateway string // gateway TCP address (instance 1's with several)
	// Gateways are every gateway's TCP address; Login spreads users over them by user id, so
	// two consecutive users are on different gateways.
	Gateways []string
	Secret   []byte // dev token signing secret
	Tenant   contract.TenantID
	Brokers  []string // for scenarios that inspect the dispatch log
	Shards   int
	Set      *svc.Set // for scenarios that kill and restart services; nil disables them
	CQL      string   // the stack's CQL node (host:port), "" without one
	// RedisCore is the core Redis, for scenarios that watch the hot tier (the hot floor).
	RedisCore string
	// Secure holds the stack's store credentials when it runs them (nil: plaintext stores).
	Secure *stack.SecureEndpoints
	base   uint64
	next   atomic.Uint64
}

// NewEnv prepares an Env whose user ids do not collide with earlier runs on the same stack.
func NewEnv(gateway string, secret []byte, brokers []string, shards int, set *svc.Set) *Env {
	var b [4]byte
	_, _ = rand.Read(b[:])
	e := &Env{Gateway: gateway, Gateways: []string{gateway}, Secret: secret, Brokers: brokers, Shards: shards, Set: set,
		base: uint64(binary.BigEndian.Uint32(b[:]))<<20 | 1}
	if set != nil && len(set.Instance(svc.Gateway)) > 1 {
		e.Gateways = set.GatewayTCPs()
	}
	return e
}

// GatewayOf is the gateway Login uses for user.
func (e *Env) GatewayOf(user contract.UserID) string {
	return e.Gateways[uint64(user)%uint64(len(e.Gateways))]
}

// Has reports whether the Env offers what a Scenario.Needs names.
func (e *Env) Has(need string) bool {
	switch need {
	case "":
		return true
	case NeedsCQL:
		return e.CQL != "" && e.Set != nil
	case NeedsInstances:
		return e.Set != nil && e.Set.Instances() >= 2
	case NeedsIdP:
		return e.idp() != nil && e.Set.TrustsIdP()
	case NeedsRateLimits:
		return e.Set != nil && e.Set.LimitsFloodTenant()
	case NeedsModeration:
		return e.Set != nil && e.Set.Moderates()
	case NeedsPush:
		return e.Set != nil && e.Set.Push() != nil && e.Set.Notifies()
	case NeedsFeed:
		return e.Set != nil && e.Set.Notifies()
	}
	return false
}

// User allocates a fresh user id.
func (e *Env) User() contract.UserID { return contract.UserID(e.base + e.next.Add(1)) }

// WriterAddr is the writer's internal gRPC address, which also serves GroupAdmin (the admin
// surface has no client opcode, so a scenario that needs an admin ADD or REMOVE dials it); ""
// when the Env has no service set.
func (e *Env) WriterAddr() string {
	if e.Set == nil {
		return ""
	}
	return e.Set.Addrs.Writer
}

// Token mints a dev token for (user, device), valid for an hour.
func (e *Env) Token(user contract.UserID, device string) string {
	tok, err := devtoken.Issue(e.Secret, devtoken.Claims{Tenant: e.Tenant, User: user, Device: device,
		ExpiresAtMs: time.Now().Add(time.Hour).UnixMilli()})
	if err != nil {
		panic(err) // only with a bad secret, which NewEnv's caller controls
	}
	return tok
}

// Login dials the user's gateway (GatewayOf) and authenticates.
func (e *Env) Login(ctx context.Context, user contract.UserID, device string, cursor uint64) (*Client, *qimv1.AuthOk, error) {
	return e.LoginAt(ctx, e.GatewayOf(user), user, device, cursor)
}

// LoginAt dials the given gateway and authenticates.
func (e *Env) LoginAt(ctx context.Context, gateway string, user contract.UserID, device string, cursor uint64) (*Client, *qimv1.AuthOk, error) {
	c, err := Dial(ctx, gateway)
	if err != nil {
		return nil, nil, err
	}
	ok, err := c.Auth(ctx, e.Token(user, device), device, cursor)
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("e2e: auth user %d: %w", user, err)
	}
	return c, ok, nil
}

// NewCmid returns a random client_message_id.
func NewCmid() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return b
}

// PullUntil pulls from cursor until pred holds for the events seen so far or ctx ends. It returns
// all events seen and the final cursor (the cursor only moves through MAILBOX_BATCH).
func PullUntil(ctx context.Context, c *Client, cursor uint64, pred func([]*qimv1.MailboxEvent) bool) ([]*qimv1.MailboxEvent, uint64, error) {
	var seen []*qimv1.MailboxEvent
	for {
		b, err := c.Pull(ctx, cursor)
		if err != nil {
			return seen, cursor, err
		}
		seen = append(seen, b.GetEntries()...)
		if n := b.GetNextCursor().GetMailboxSeq(); n > cursor {
			cursor = n
		}
		if pred(seen) {
			return seen, cursor, nil
		}
		if b.GetHasMore() {
			continue
		}
		select {
		case <-ctx.Done():
			return seen, cursor, fmt.Errorf("e2e: mailbox never satisfied the scenario (%d events seen): %w", len(seen), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// HasMessage reports whether events contain message id mid.
func HasMessage(mid []byte) func([]*qimv1.MailboxEvent) bool {
	return func(evs []*qimv1.MailboxEvent) bool { return CountMessage(evs, mid) > 0 }
}

// CountMessage counts events carrying message id mid.
func CountMessage(evs []*qimv1.MailboxEvent, mid []byte) int {
	n := 0
	for _, ev := range evs {
		if string(ev.GetMessageId()) == string(mid) {
			n++
		}
	}
	return n
}

// LoginToBacklog logs a device in at gateway until AUTH_OK says it has offline data, for at
// most within. A message is "waiting" once its recipient's MailboxNode has materialized it; the
// recipient's shard may be materialized after the sender's, which is all a scenario can wait
// for before the recipient exists, so a first "no" is retried rather than trusted. A gateway
// that never says yes still fails the check, when within runs out.
func (e *Env) LoginToBacklog(ctx context.Context, gateway string, user contract.UserID, device string, within time.Duration) (*Client, error) {
	deadline := time.Now().Add(within)
	for {
		c, ok, err := e.LoginAt(ctx, gateway, user, device, 0)
		if err != nil {
			return nil, err
		}
		if ok.GetHasOfflineData() {
			return c, nil
		}
		c.Close()
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("AUTH_OK.has_offline_data stayed false for %s with a message waiting", within)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

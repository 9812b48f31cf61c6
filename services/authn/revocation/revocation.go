// Package revocation ends credentials before they expire: "every credential of this user (or
// of this device) issued before T is refused", stored in the core Redis and announced to every
// gateway.
//
// Storage: one hash per user, qim:revoke:<tenant 32 hex>:<user>, field "*" for the whole user
// or the device id, value T in Unix milliseconds. Every AUTH reads the two fields that can cover
// it (HMGET) — the durable check. A change is also PUBLISHed on Channel, in the same MULTI as
// the HSET, so each gateway kicks its live sessions it covers within a round trip; a gateway that
// was not subscribed at that moment re-checks all of its sessions when it subscribes again.
//
// Invariants:
//   - A credential whose issue time is unknown (a dev token, a JWT without iat) is covered by
//     every revocation of its user or device: fail closed.
//   - A revocation never expires: the longest life of a token it covers is the issuer's choice,
//     unknown here. Lift removes it.
//
// Rejected alternative: a compacted Kafka topic followed by every gateway (like qim.presence).
// AUTH would check an in-memory map instead of one Redis round trip, but every gateway would
// have to load the whole topic before admitting anyone, a single gateway without Kafka could not
// revoke at all, and the topic would be one more for every deployment to create (ADR-0032).
package revocation

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
)

// Channel is the Redis Pub/Sub channel of revocation changes. Not "qim:…": that prefix names
// keys, each of which belongs to a key family (services/inspect); a channel stores nothing.
const Channel = "qim.revocations"

// KeyPrefix starts every revocation hash: qim:revoke:<tenant 32 hex>:<user decimal>.
const KeyPrefix = "qim:revoke:"

// AllDevices is the hash field of a revocation of the whole user.
const AllDevices = "*"

// Revocation is one change: credentials of (Tenant, User, Device) issued before NotBefore are
// refused. Device AllDevices covers every device of the user.
type Revocation struct {
	Tenant    contract.TenantID
	User      contract.UserID
	Device    string
	NotBefore time.Time // zero in a lift
}

// ErrInvalid is wrapped by a Revocation no gateway could apply.
var ErrInvalid = errors.New("revocation: invalid")

// Key is the hash of a user's revocations.
func Key(tenant contract.TenantID, user contract.UserID) string {
	b := tenant.Bytes()
	return KeyPrefix + hex.EncodeToString(b[:]) + ":" + strconv.FormatUint(uint64(user), 10)
}

func (r Revocation) check() error {
	switch {
	case r.User == 0:
		return fmt.Errorf("%w: user id 0", ErrInvalid)
	case r.Device == "" || len(r.Device) > contract.DeviceIDMaxBytes:
		return fmt.Errorf("%w: device of %d bytes (want 1..%d, or %q for every device)", ErrInvalid, len(r.Device), contract.DeviceIDMaxBytes, AllDevices)
	}
	return nil
}

// Revoke stores r and announces it, atomically (MULTI): a gateway that sees the message also
// finds the hash field, and a failure leaves neither.
func Revoke(ctx context.Context, rdb redis.Cmdable, r Revocation) error {
	if err := r.check(); err != nil {
		return err
	}
	if r.NotBefore.IsZero() {
		return fmt.Errorf("%w: no time: a revocation refuses credentials issued before a time", ErrInvalid)
	}
	ms := r.NotBefore.UnixMilli()
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, Key(r.Tenant, r.User), r.Device, ms)
		p.Publish(ctx, Channel, encode(r))
		return nil
	})
	if err != nil {
		return fmt.Errorf("revocation: revoke: %w", err)
	}
	return nil
}

// Lift removes the revocation of (tenant, user, device): credentials it covered are accepted
// again if nothing else refuses them. Live sessions are not affected.
func Lift(ctx context.Context, rdb redis.Cmdable, r Revocation) error {
	if err := r.check(); err != nil {
		return err
	}
	if err := rdb.HDel(ctx, Key(r.Tenant, r.User), r.Device).Err(); err != nil {
		return fmt.Errorf("revocation: lift: %w", err)
	}
	return nil
}

// NotBefore reads the time before which credentials of (tenant, user, device) are refused: the
// later of the user's and the device's revocation, zero when there is none.
func NotBefore(ctx context.Context, rdb redis.Cmdable, tenant contract.TenantID, user contract.UserID, device string) (time.Time, error) {
	vals, err := rdb.HMGet(ctx, Key(tenant, user), AllDevices, device).Result()
	if err != nil {
		return time.Time{}, fmt.Errorf("revocation: read: %w", err)
	}
	var latest int64
	for _, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue // nil: no such field
		}
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("revocation: %s holds %q, not a time", Key(tenant, user), s)
		}
		latest = max(latest, ms)
	}
	if latest == 0 {
		return time.Time{}, nil
	}
	return time.UnixMilli(latest), nil
}

// Covers reports whether a revocation at notBefore refuses a credential issued at issuedAt
// (zero: unknown, which every revocation covers).
func Covers(notBefore, issuedAt time.Time) bool {
	return !notBefore.IsZero() && (issuedAt.IsZero() || issuedAt.Before(notBefore))
}

// encode is a Channel message: <tenant hex>:<user>:<not before ms>:<device>, the device last so
// a ':' inside it cannot shift the other fields.
func encode(r Revocation) string {
	b := r.Tenant.Bytes()
	return hex.EncodeToString(b[:]) + ":" + strconv.FormatUint(uint64(r.User), 10) + ":" +
		strconv.FormatInt(r.NotBefore.UnixMilli(), 10) + ":" + r.Device
}

// Decode parses a Channel message.
func Decode(msg string) (Revocation, error) {
	f := strings.SplitN(msg, ":", 4)
	if len(f) != 4 {
		return Revocation{}, fmt.Errorf("%w: message %q", ErrInvalid, msg)
	}
	tenant, err := contract.ParseU128(f[0])
	if err != nil {
		return Revocation{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	user, err1 := strconv.ParseUint(f[1], 10, 64)
	ms, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return Revocation{}, fmt.Errorf("%w: message %q", ErrInvalid, msg)
	}
	r := Revocation{Tenant: tenant, User: contract.UserID(user), Device: f[3], NotBefore: time.UnixMilli(ms)}
	return r, r.check()
}

package revocation

// Kicks end live sessions without refusing their credentials: an operator's "sign this device
// out now" (the admin API's POST /v1/kicks). A kick is only a message on KickChannel; every
// gateway ends the sessions it covers with KICKED{KICKED_BY_ADMIN}.
//
// Invariant: a kick stores nothing. A gateway that is not subscribed at the moment of the
// PUBLISH misses it, so Kick reports how many gateways received it; an operator who needs the
// session gone for good revokes instead (the hash every AUTH reads, and the re-check on
// resubscription).
//
// Rejected: storing kicks like revocations. A stored kick would have to say which sessions it
// ended (those live at its time), which is a revocation by time in all but name.

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
)

// KickChannel is the Redis Pub/Sub channel of kicks (a channel, not a key: see Channel).
const KickChannel = "qim.kicks"

// Kick names the sessions to end: every session of (Tenant, User) on Device, or on every device
// when Device is AllDevices.
type Kick struct {
	Tenant contract.TenantID
	User   contract.UserID
	Device string
}

func (k Kick) check() error {
	return Revocation{Tenant: k.Tenant, User: k.User, Device: k.Device}.check()
}

// Publish announces k and returns how many subscribers received it: the gateways whose
// revocation follower was subscribed (0 when none was, and then no session ended).
func Publish(ctx context.Context, rdb redis.Cmdable, k Kick) (int64, error) {
	if err := k.check(); err != nil {
		return 0, err
	}
	n, err := rdb.Publish(ctx, KickChannel, encodeKick(k)).Result()
	if err != nil {
		return 0, fmt.Errorf("revocation: kick: %w", err)
	}
	return n, nil
}

// Covers reports whether k ends a session of device.
func (k Kick) Covers(device string) bool { return k.Device == AllDevices || k.Device == device }

// encodeKick is a KickChannel message: <tenant hex>:<user>:<device>, the device last so a ':'
// inside it cannot shift the other fields.
func encodeKick(k Kick) string {
	b := k.Tenant.Bytes()
	return hex.EncodeToString(b[:]) + ":" + strconv.FormatUint(uint64(k.User), 10) + ":" + k.Device
}

// DecodeKick parses a KickChannel message.
func DecodeKick(msg string) (Kick, error) {
	f := strings.SplitN(msg, ":", 3)
	if len(f) != 3 {
		return Kick{}, fmt.Errorf("%w: kick %q", ErrInvalid, msg)
	}
	tenant, err := contract.ParseU128(f[0])
	if err != nil {
		return Kick{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	user, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return Kick{}, fmt.Errorf("%w: kick %q", ErrInvalid, msg)
	}
	k := Kick{Tenant: tenant, User: contract.UserID(user), Device: f[2]}
	return k, k.check()
}

// Package pushtoken keeps the devices' offline-push registrations in the core Redis: the
// gateway writes them (REGISTER_PUSH_TOKEN, and removes one at LOGOUT), the
// NotificationService reads them and marks the (message, device) notifications its providers
// accepted, so a replayed dispatch does not wake a device twice.
//
// Invariants: one registration per device, the last one written wins; a user's registrations
// expire contract.PushTokenTTL after the last registration of any of their devices (apps
// register at every start); a done mark is written only after the provider accepted the
// notification, so a crash between the two sends it again (at least once, never lost to a
// mark written too early).
//
// Layout: qim:ptok:<tenant>:<user> a hash device → RegisterPushToken (qim.v1, as the client
// sent it); qim:pdone:<tenant>:<message_id>:<user>:<device> a string with a TTL.
//
// Rejected: the registrations in the mailbox Redis (it may lose the last second on a crash,
// and a lost registration is a device that silently stops being woken until its app restarts),
// and a done mark written before the send (a crash then loses the notification for good).
package pushtoken

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/services/internal/keyfamily"
)

// Key prefixes of the two families.
const (
	TokenPrefix = "qim:ptok:"
	DonePrefix  = "qim:pdone:"
)

// ErrInvalid is wrapped by every refusal of a registration's content.
var ErrInvalid = errors.New("pushtoken: invalid registration")

// Registration is one device's push registration.
type Registration struct {
	DeviceID string
	Platform contract.PushPlatform
	Token    string
	AppID    string
}

// TokenKey is the hash of a user's registrations.
func TokenKey(tenant contract.TenantID, user contract.UserID) string {
	return TokenPrefix + tenant.String() + ":" + strconv.FormatUint(uint64(user), 10)
}

// DoneKey marks one accepted notification.
func DoneKey(tenant contract.TenantID, msg contract.MessageID, user contract.UserID, device string) string {
	return DonePrefix + tenant.String() + ":" + contract.U128(msg).String() + ":" + strconv.FormatUint(uint64(user), 10) + ":" + device
}

// KeyFamilies declares both layouts for the redis-artifacts gate.
func KeyFamilies() []keyfamily.Family {
	return []keyfamily.Family{
		keyfamily.New("pushtoken.registration", keyfamily.Core, "qim:ptok:<tenant>:<user>", TokenPrefix,
			`[0-9a-f]{32}:[1-9][0-9]*`).WithExample(TokenKey(contract.TenantID{Lo: 1}, 42)).Expiring(),
		keyfamily.New("pushtoken.done", keyfamily.Core, "qim:pdone:<tenant>:<message_id>:<user>:<device>", DonePrefix,
			`[0-9a-f]{32}:[0-9a-f]{32}:[1-9][0-9]*:.+`).
			WithExample(DoneKey(contract.TenantID{Lo: 1}, contract.MessageID{Lo: 9}, 42, "phone")).Expiring(),
	}
}

// Check refuses a registration the store must not hold. An empty token is a removal and
// needs nothing else.
func Check(r Registration) error {
	switch {
	case r.DeviceID == "":
		return fmt.Errorf("%w: no device", ErrInvalid)
	case r.Token == "":
		return nil
	case !r.Platform.Valid():
		return fmt.Errorf("%w: unknown platform %d", ErrInvalid, r.Platform)
	case len(r.Token) > contract.PushTokenMaxBytes:
		return fmt.Errorf("%w: token above %d bytes", ErrInvalid, contract.PushTokenMaxBytes)
	case len(r.AppID) > contract.PushAppIDMaxBytes:
		return fmt.Errorf("%w: app_id above %d bytes", ErrInvalid, contract.PushAppIDMaxBytes)
	}
	return nil
}

// Register stores r (or removes the device's registration when r.Token is empty) and renews
// the user's expiry.
func Register(ctx context.Context, rdb redis.Cmdable, tenant contract.TenantID, user contract.UserID, r Registration) error {
	if err := Check(r); err != nil {
		return err
	}
	key := TokenKey(tenant, user)
	if r.Token == "" {
		if err := rdb.HDel(ctx, key, r.DeviceID).Err(); err != nil {
			return fmt.Errorf("pushtoken: remove %s: %w", key, err)
		}
		return nil
	}
	v, err := proto.Marshal(&qimv1.RegisterPushToken{Platform: uint32(r.Platform), Token: r.Token, AppId: r.AppID})
	if err != nil {
		return fmt.Errorf("pushtoken: encode: %w", err)
	}
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, r.DeviceID, v)
		p.PExpire(ctx, key, contract.PushTokenTTL)
		return nil
	})
	if err != nil {
		return fmt.Errorf("pushtoken: register %s: %w", key, err)
	}
	return nil
}

// Decode reads one stored registration. A value that does not decode is an error: the caller
// counts it and skips the device (a registration is re-sent at the app's next start).
func Decode(device string, v string) (Registration, error) {
	var m qimv1.RegisterPushToken
	if err := proto.Unmarshal([]byte(v), &m); err != nil {
		return Registration{}, fmt.Errorf("%w: device %q: %w", ErrInvalid, device, err)
	}
	r := Registration{DeviceID: device, Platform: contract.PushPlatform(m.GetPlatform()), Token: m.GetToken(), AppID: m.GetAppId()}
	if err := Check(r); err != nil || r.Token == "" {
		return Registration{}, fmt.Errorf("%w: device %q: stored value refused", ErrInvalid, device)
	}
	return r, nil
}

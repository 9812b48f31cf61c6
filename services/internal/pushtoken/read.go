package pushtoken

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
)

// User names one user of one tenant.
type User struct {
	Tenant contract.TenantID
	User   contract.UserID
}

// List returns the registrations of users, in one pipeline. bad counts stored values that did
// not decode (skipped).
func List(ctx context.Context, rdb redis.Cmdable, users []User) (regs map[User][]Registration, bad int, err error) {
	cmds := make([]*redis.MapStringStringCmd, len(users))
	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, u := range users {
			cmds[i] = p.HGetAll(ctx, TokenKey(u.Tenant, u.User))
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("pushtoken: list %d users: %w", len(users), err)
	}
	regs = make(map[User][]Registration, len(users))
	for i, u := range users {
		for device, v := range cmds[i].Val() {
			r, derr := Decode(device, v)
			if derr != nil {
				bad++
				continue
			}
			regs[u] = append(regs[u], r)
		}
	}
	return regs, bad, nil
}

// Done reports, for each key (DoneKey), whether its notification was already accepted.
func Done(ctx context.Context, rdb redis.Cmdable, keys []string) ([]bool, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	vals, err := rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("pushtoken: done marks of %d notifications: %w", len(keys), err)
	}
	out := make([]bool, len(keys))
	for i, v := range vals {
		out[i] = v != nil
	}
	return out, nil
}

// MarkDone records that key's notification was accepted by its provider.
func MarkDone(ctx context.Context, rdb redis.Cmdable, key string) error {
	if err := rdb.Set(ctx, key, "1", contract.PushDedupTTL).Err(); err != nil {
		return fmt.Errorf("pushtoken: mark %s: %w", key, err)
	}
	return nil
}

// Forget removes a device's registration if it still holds token: the provider refused that
// token, and a registration written since (a new token) must survive.
func Forget(ctx context.Context, rdb *redis.Client, u User, device, token string) error {
	key := TokenKey(u.Tenant, u.User)
	err := rdb.Watch(ctx, func(tx *redis.Tx) error {
		v, err := tx.HGet(ctx, key, device).Result()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err != nil {
			return err
		}
		if r, derr := Decode(device, v); derr == nil && r.Token != token {
			return nil
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HDel(ctx, key, device)
			return nil
		})
		return err
	}, key)
	if errors.Is(err, redis.TxFailedErr) {
		return nil // the registration changed meanwhile: a newer one is not the refused token
	}
	if err != nil {
		return fmt.Errorf("pushtoken: forget a device of %s: %w", key, err)
	}
	return nil
}

package admin

// Where users are online: the admin process follows qim.presence from its start, like a
// MailboxNode but over every partition, and answers from the PresenceDirectory it builds
// (services/internal/presence). Memory follows the online population, not every user.
//
// Rejected: asking each gateway. The admin API would have to know every gateway and fan each
// call out to all of them; the directory is what the system already publishes for that question.

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/presence"
)

// DevicesQuery names a user in a GET's query.
type DevicesQuery struct {
	Tenant string `json:"tenant,omitempty" doc:"tenant as 32 hex digits (default: tenant 0)"`
	User   uint64 `json:"user" doc:"user id (from 1)"`
}

// OnlineDevice is one device of the user that holds a session.
type OnlineDevice struct {
	Device       string `json:"device" doc:"device id"`
	Gateway      string `json:"gateway" doc:"the gateway holding the session (its Push address)"`
	SessionEpoch uint64 `json:"session_epoch" doc:"the session's session_epoch (a newer login of the device has a higher one)"`
}

// Devices lists where a user is online.
type Devices struct {
	User   uint64         `json:"user" doc:"user id"`
	Online []OnlineDevice `json:"online" doc:"online devices, by device id; empty when the user is offline"`
}

// presenceView is the directory and the follower filling it.
type presenceView struct {
	mu  sync.Mutex
	dir *presence.Directory
	f   *presence.Follower
}

func (v *presenceView) apply(es []presence.Entry) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, e := range es {
		v.dir.Apply(e)
	}
}

// followPresence opens the follower of every qim.presence partition (nothing is read until its
// Run).
func followPresence(ctx context.Context, brokers []string, security []kgo.Opt, shards contract.ShardCount, bad func(error)) (*presenceView, error) {
	v := &presenceView{dir: presence.New()}
	f, err := presence.Follow(ctx, brokers, security, shards, presence.FromStart, presence.Hooks{Apply: v.apply, Bad: bad}, nil)
	if err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	v.f = f
	return v, nil
}

func devices(_ context.Context, a *api, in input) (int, any, []any, error) {
	var q DevicesQuery
	if err := decodeQuery(in.query, &q); err != nil {
		return 0, nil, nil, err
	}
	audit := []any{"user", q.User}
	t, err := parseTenant(q.Tenant)
	switch {
	case err != nil:
		return 0, nil, audit, err
	case q.User == 0:
		return 0, nil, audit, fmt.Errorf("%w: user must be a user id", errBadRequest)
	case a.presence == nil:
		return 0, nil, audit, fmt.Errorf("%w: presence is off (no QIM_KAFKA_BROKERS)", errNotFound)
	case !a.presence.f.Loaded():
		return 0, nil, audit, fmt.Errorf("admin: qim.presence is still loading")
	}
	a.presence.mu.Lock()
	locs := a.presence.dir.Devices(nil, t, contract.UserID(q.User))
	a.presence.mu.Unlock()
	out := Devices{User: q.User, Online: []OnlineDevice{}}
	for _, l := range locs {
		out.Online = append(out.Online, OnlineDevice{Device: l.DeviceID, Gateway: l.Gateway, SessionEpoch: l.Epoch})
	}
	return http.StatusOK, out, audit, nil
}

package room

import (
	"context"
	"time"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
	"github.com/qim-dev/qim/services/room/modstore"
)

// storeTimeout bounds one load or store of a room's moderation. It is spent under the room's
// lock, and a load on a join is spent on the link's receiver, so it is short: a core Redis that
// does not answer within it makes the room UNAVAILABLE, and the next call tries again.
const storeTimeout = time.Second

// modStore is where rooms' moderation is kept: modstore.Store on the core Redis in a running
// process; the package's tests use a memory one.
type modStore interface {
	Load(ctx context.Context, tenant contract.TenantID, room contract.ConversationID, now time.Time) (modstore.State, error)
	Apply(ctx context.Context, in *internalv1.RoomModeration, tenant contract.TenantID, room contract.ConversationID, now time.Time) error
}

// withRoom runs fn on the live room of key (instantiated if needed) with the room's lock held
// and its stored moderation loaded. When the load fails fn is not run and the answer is
// UNAVAILABLE: nothing of the room is decided on a state that may lack a ban.
func (s *Service) withRoom(key roomKey, now time.Time, fn func(r *room)) error {
	var err error
	s.rooms.with(key, now, true, func(r *room) {
		if !r.loaded {
			if err = s.load(r, now); err != nil {
				return
			}
		}
		fn(r)
	})
	return err
}

// load reads r's stored moderation into r.mod. r.mu is held.
func (s *Service) load(r *room, now time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	st, err := s.mods.Load(ctx, r.key.tenant, r.key.conv, now)
	if err != nil {
		s.m.storeFailures.WithLabelValues("load").Inc()
		s.log.Warn("room: moderation not loaded; the room is unavailable", "err", err)
		return rpc.Refuse(contract.ErrCodeUnavailable, "the room's moderation could not be loaded")
	}
	m := &r.mod
	m.bans, m.mutes, m.slow, m.rate = st.Bans, st.Mutes, st.Slow, st.Rate
	m.tokens, m.tokensAt = float64(st.Rate), now
	r.loaded = true
	return nil
}

// store writes one decision about r before it takes effect. r.mu is held: decisions of one
// room are stored in the order they are applied.
func (s *Service) store(r *room, in *internalv1.RoomModeration, now time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.mods.Apply(ctx, in, r.key.tenant, r.key.conv, now); err != nil {
		s.m.storeFailures.WithLabelValues("store").Inc()
		s.log.Warn("room: moderation not stored; refused", "err", err)
		return rpc.Refuse(contract.ErrCodeUnavailable, "the moderation could not be stored")
	}
	return nil
}

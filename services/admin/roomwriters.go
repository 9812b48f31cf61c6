package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/grpc"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// roomWriters calls RoomWriter.Moderate on the instance that owns a room:
// contract.RoomOwner(tenant, room, QIM_ROOM_ADDRS), the placement every gateway uses.
//
// Invariant: a call goes to the owner or fails. While the owner is down the room is
// unavailable (the handler answers 503), as it is to clients (ADR-0034).
//
// Rejected: the writers' fallback (firstAnswer). Any writer may commit for any group because
// Redis holds the group; a room's members, bans and mutes live only in its owner's memory.
// Another instance would create an empty copy of the room, apply the ban there, where no
// gateway sends that room's joins or publishes, and answer 200 for a change that does nothing.
type roomWriters struct {
	addrs   []string // QIM_ROOM_ADDRS in the configured order: RoomOwner returns an index into it
	conns   []*grpc.ClientConn
	clients []internalv1.RoomWriterClient
}

// dialRooms makes a client per RoomWriter. grpc.NewClient connects on the first call, so an
// instance that is down now fails only the calls for its rooms, not the admin API's start.
func dialRooms(addrs []string, creds grpc.DialOption) (*roomWriters, error) {
	r := &roomWriters{addrs: slices.Clone(addrs)}
	for _, a := range addrs {
		cc, err := grpc.NewClient(a, creds)
		if err != nil {
			_ = r.Close()
			return nil, fmt.Errorf("admin: RoomWriter %s: %w", a, err)
		}
		r.conns = append(r.conns, cc)
		r.clients = append(r.clients, internalv1.NewRoomWriterClient(cc))
	}
	return r, nil
}

// Moderate sends in to the owner of (tenant, room). room must be the canonical room
// conversation id (contract.RoomConversationID), the key the gateways place the room by.
func (r *roomWriters) Moderate(ctx context.Context, tenant contract.TenantID, room contract.ConversationID,
	in *internalv1.RoomModeration) (*internalv1.RoomModerationOutcome, error) {
	i := contract.RoomOwner(tenant, room, r.addrs)
	if i < 0 {
		return nil, errors.New("admin: no RoomWriter configured")
	}
	out, err := r.clients[i].Moderate(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("admin: RoomWriter %s (the room's owner): %w", r.addrs[i], err)
	}
	return out, nil
}

// Close closes every connection.
func (r *roomWriters) Close() error {
	var errs []error
	for _, cc := range r.conns {
		errs = append(errs, cc.Close())
	}
	return errors.Join(errs...)
}

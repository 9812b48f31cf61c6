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
// Redis holds the group; a room's members live only in its owner's memory, and its bans and
// mutes are in force from there (the owner loads them once, when it instantiates the room).
// Another instance would store the ban and apply it to an empty copy of the room where no
// gateway sends that room's joins or publishes: the owner would not see it until its next
// restart, and the banned user's connections would stay.
type roomWriters struct {
	addrs []string // QIM_ROOM_ADDRS in the configured order: RoomOwner returns an index into it
	conns[internalv1.RoomWriterClient]
}

// dialRooms makes a client per RoomWriter; one that is down fails only the calls for its rooms.
func dialRooms(addrs []string, creds grpc.DialOption) (*roomWriters, error) {
	c, err := dialAll("RoomWriter", addrs, creds, internalv1.NewRoomWriterClient)
	if err != nil {
		return nil, err
	}
	return &roomWriters{addrs: slices.Clone(addrs), conns: c}, nil
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

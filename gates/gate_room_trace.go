package gates

import (
	"context"
	"fmt"

	"github.com/qim-dev/qim/gates/keyspace"
	"github.com/qim-dev/qim/gates/svc"
)

// metricRoomPublishes counts the room events a RoomWriter accepted (services/room).
const metricRoomPublishes = "qim_room_publishes_total"

// judgeRoomTrace is gate 7's proof that room events never reach Redis (ADR-0034: a room's events
// live in its RoomWriter's memory only; rooms write no mailbox entry, session row, read watermark
// or seq counter). The one key a room may have is its stored moderation
// (modstore.room_moderation), which holds operator decisions and no event, and names no
// conversation to the readers below. Every conversation the stores' keys name (in key names, session-list members,
// read-watermark fields and mailbox entries, as each owner declares) is read, and none may be a
// room's. The check also requires that the run published room events (the e2e gate's room
// scenarios do) and that the scan read conversations at all: a scan that saw no room traffic,
// or no conversation, proves nothing and fails.
//
// The RoomWriters' counters restart with them (the e2e kill scenario restarts one), so the
// published count is a lower bound; only its being above zero is judged.
func judgeRoomTrace(ctx context.Context, r *Result, env *Env, invs []*keyspace.Inventory) {
	published, err := roomPublishes(ctx, env)
	roomTraceCheck(r, invs, published, err)
}

// roomTraceCheck judges the scanned inventories and the RoomWriters' published count.
func roomTraceCheck(r *Result, invs []*keyspace.Inventory, published float64, err error) {
	var convs, rooms, unreadable int64
	var where []string
	for _, inv := range invs {
		for _, f := range inv.Families {
			convs, rooms, unreadable = convs+f.Conversations, rooms+f.Rooms, unreadable+f.Unreadable
			if f.Rooms > 0 {
				where = append(where, fmt.Sprintf("%s %d%s", f.Name, f.Rooms, examples(f.RoomKeys)))
			}
		}
	}
	r.Metric("room_events_published", published)
	r.Metric("room_conversations_in_redis", float64(rooms))
	r.Metric("conversations_read", float64(convs))
	r.Check("rooms left no trace", err == nil && published > 0 && convs > 0 && rooms == 0 && unreadable == 0,
		"%d conversations read from key names, session lists, read watermarks and mailbox entries: "+
			"%d of a room (%s), %d members unreadable; %v room events published by the RoomWriters (%v)",
		convs, rooms, listOrNone(where), unreadable, published, errOrNone(err))
}

// roomPublishes sums the RoomWriters' accepted room events.
func roomPublishes(ctx context.Context, env *Env) (float64, error) {
	if env == nil || env.Deployment == nil {
		return 0, fmt.Errorf("no deployment to read the RoomWriters' metrics from")
	}
	set, err := env.Deployment(ctx)
	if err != nil {
		return 0, err
	}
	if !set.Rooms() {
		return 0, fmt.Errorf("the deployment runs no RoomWriter")
	}
	var sum float64
	for _, name := range set.Instance(svc.Room) {
		v, err := set.Metric(ctx, name, metricRoomPublishes)
		if err != nil {
			return sum, fmt.Errorf("%s: %w", name, err)
		}
		sum += v
	}
	return sum, nil
}

func errOrNone(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

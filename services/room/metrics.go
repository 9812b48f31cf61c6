package room

import (
	"github.com/prometheus/client_golang/prometheus"

	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/obs"
)

// metrics are the RoomWriter's instruments. No label carries a tenant, room, user or message
// id, nor a gateway name; outcome and reason come from the fixed sets in publish.go,
// membership.go and server.go.
type metrics struct {
	publishes     *prometheus.CounterVec // outcome
	moderations   *prometheus.CounterVec // action
	events        prometheus.Counter
	joins         *prometheus.CounterVec // outcome
	leavesIgnored prometheus.Counter
	truncated     prometheus.Counter
	links         prometheus.Gauge
	linksEnded    *prometheus.CounterVec // reason
	sends         prometheus.Counter
	itemsSent     prometheus.Counter
	unknownCalls  prometheus.Counter
	roomsDropped  prometheus.Counter
	storeFailures *prometheus.CounterVec // op
}

func newMetrics(reg *obs.Registry) *metrics {
	m := &metrics{
		publishes: reg.CounterVec("qim_room_publishes_total",
			"Room publishes, by outcome: ok (a new event), duplicate (a retry answered from the buffer), refused (an error code).", "outcome"),
		moderations: reg.CounterVec("qim_room_moderations_total",
			"Moderate calls, by action (ban, unban, kick, mute, unmute, slow_mode, rate_limit, info, none).", "action"),
		events: reg.Counter("qim_room_events_broadcast_total",
			"Events put into a room's buffer and queued for every link with joined connections (once per event, not per link)."),
		joins: reg.CounterVec("qim_room_joins_total",
			"Room joins, by outcome: ok, refused (an error code), link_ended (the link ended first).", "outcome"),
		leavesIgnored: reg.Counter("qim_room_leaves_ignored_total",
			"Room leaves with no joined connection to end (duplicates, or after the link's memberships were removed)."),
		truncated: reg.Counter("qim_room_replays_truncated_total",
			"Joins whose replay could not start at the requested room_seq (older than the buffer, a room new to this process, or the byte budget)."),
		links: reg.Gauge("qim_room_links", "Gateway links open."),
		linksEnded: reg.CounterVec("qim_room_links_ended_total",
			"Gateway links ended, by reason: slow (queue full), closed (by the gateway or at shutdown), error (the stream broke).", "reason"),
		sends: reg.Counter("qim_room_link_sends_total",
			"RoomLinkDown messages sent on links (one per sender wake-up unless it exceeds the byte budget)."),
		itemsSent: reg.Counter("qim_room_link_items_sent_total",
			"RoomLinkItems sent on links: join answers and event batches (consecutive events of a room merged)."),
		unknownCalls: reg.Counter("qim_room_link_unknown_calls_total",
			"RoomLinkUp messages with no operation this build knows, skipped."),
		roomsDropped: reg.Counter("qim_room_rooms_dropped_total",
			"Idle rooms dropped by the sweep (no joined connection, nothing left to replay)."),
		storeFailures: reg.CounterVec("qim_room_moderation_store_failures_total",
			"Failed reads and writes of stored room moderation in the core Redis, by op: load (the room answered UNAVAILABLE), store (the decision was refused).", "op"),
	}
	for _, o := range []string{"load", "store"} {
		m.storeFailures.WithLabelValues(o)
	}
	for _, o := range []string{publishOK, publishDuplicate, publishRefused} {
		m.publishes.WithLabelValues(o)
	}
	for _, o := range []string{joinOK, joinRefused, joinEnded} {
		m.joins.WithLabelValues(o)
	}
	for _, r := range []string{endSlow, endClosed, endError} {
		m.linksEnded.WithLabelValues(r)
	}
	return m
}

// gauges registers the gauges read at scrape time from the service's state.
func (s *Service) gauges() {
	s.reg.GaugeFunc("qim_room_rooms", "Rooms live in this process.", func() float64 { return float64(s.rooms.len()) })
	s.reg.GaugeFunc("qim_room_joined_connections", "Joined connections over every room.",
		func() float64 { return float64(s.tally.joined.Load()) })
	s.reg.GaugeFunc("qim_room_members", "Distinct (room, user) pairs with at least one joined connection.",
		func() float64 { return float64(s.tally.members.Load()) })
	s.reg.GaugeFunc("qim_room_link_queue_items", "Items queued on links, waiting for their sender (each link holds at most QIM_ROOM_LINK_QUEUE).",
		func() float64 { return float64(s.queued.Load()) })
}

// InvariantCounters names the always-zero counters the RoomWriter registers (none yet), read
// from a scratch registry as New builds the service's own, so package services can hold them
// against contract.InvariantCounters() without starting the service.
func InvariantCounters() []string {
	reg := obs.NewRegistry("room")
	newMetrics(reg)
	return reg.InvariantNames()
}

// moderationAction is the action label of a Moderate call.
func moderationAction(in *internalv1.RoomModeration) string {
	switch in.GetAction().(type) {
	case *internalv1.RoomModeration_Ban:
		return "ban"
	case *internalv1.RoomModeration_Unban:
		return "unban"
	case *internalv1.RoomModeration_Kick:
		return "kick"
	case *internalv1.RoomModeration_Mute:
		return "mute"
	case *internalv1.RoomModeration_Unmute:
		return "unmute"
	case *internalv1.RoomModeration_SlowMode:
		return "slow_mode"
	case *internalv1.RoomModeration_RateLimit:
		return "rate_limit"
	case *internalv1.RoomModeration_Info:
		return "info"
	}
	return "none"
}

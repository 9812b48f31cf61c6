package gateway

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/gateway/ratelimit"
	"github.com/qim-dev/qim/services/internal/obs"
)

// metrics are the gateway's instruments. No label carries a user, device, message or token; the
// opcode and error-code labels come from the contract's finite tables.
type metrics struct {
	connections        *prometheus.GaugeVec   // transport
	connRejected       *prometheus.CounterVec // reason
	auths              prometheus.Counter
	authFailures       *prometheus.CounterVec // reason
	jwksFetches        *prometheus.CounterVec // outcome
	hookCalls          *prometheus.CounterVec // outcome
	revocationsApplied prometheus.Counter
	hookSeconds        prometheus.Histogram
	framesRejected     *prometheus.CounterVec // reason
	kicks              *prometheus.CounterVec // reason
	heartbeatClosed    prometheus.Counter
	sendRoundTrip      prometheus.Histogram
	sendBlocked        prometheus.Counter
	writerLost         prometheus.Counter
	backendDepth       *prometheus.GaugeVec   // backend
	writerDepth        prometheus.Gauge       // backendDepth{backend="writer"}, resolved once: per-SEND path
	requestErrors      *prometheus.CounterVec // opcode, code
	pushes             *prometheus.CounterVec // outcome
	pushDropped        prometheus.Counter
	orphanOutcomes     prometheus.Counter // invariant
	pullBatchSize      prometheus.Histogram
	roomJoins          *prometheus.CounterVec // outcome
	roomLeft           *prometheus.CounterVec // reason
	roomSends          *prometheus.CounterVec // outcome
	roomFrames         prometheus.Counter
	roomLinkLost       prometheus.Counter
	rateLimited        *prometheus.CounterVec // scope
	readSyncs          *prometheus.CounterVec // stage
	typing             *prometheus.CounterVec // stage
	reactions          *prometheus.CounterVec // stage
	pushTokens         *prometheus.CounterVec // outcome
	receipts           *prometheus.CounterVec // stage
	rateSyncSeconds    prometheus.Histogram
	rateSyncFailures   prometheus.Counter
}

// latencyBuckets span 200 µs to 5 s; the SLO line (150 ms SEND_ACK P99) falls mid-range.
var latencyBuckets = prometheus.ExponentialBucketsRange(0.0002, 5, 20)

func newMetrics(reg *obs.Registry) *metrics {
	m := &metrics{
		connections: reg.GaugeVec("qim_gateway_connections",
			"Live client connections (authenticated or not), by transport.", "transport"),
		connRejected: reg.CounterVec("qim_gateway_connections_rejected_total",
			"Connections closed at accept, by reason (max_conns).", "reason"),
		auths: reg.Counter("qim_gateway_auths_total", "AUTH requests granted (counted before AUTH_OK is written)."),
		authFailures: reg.CounterVec("qim_gateway_auth_failures_total",
			"Failed AUTH handshakes, by reason.", "reason"),
		jwksFetches: reg.CounterVec("qim_gateway_jwks_fetches_total",
			"Requests to JWT issuers' JWKS URLs, by outcome (ok, error).", "outcome"),
		revocationsApplied: reg.Counter("qim_gateway_revocations_applied_total",
			"Live sessions ended by a revocation (KICKED LOGGED_OUT)."),
		hookCalls: reg.CounterVec("qim_gateway_connect_webhook_calls_total",
			"Calls of the connect webhook (cache misses), by outcome (ok, refused, unavailable).", "outcome"),
		hookSeconds: reg.Histogram("qim_gateway_connect_webhook_seconds",
			"Duration of one connect-webhook call, the concurrency wait included.", latencyBuckets),
		framesRejected: reg.CounterVec("qim_gateway_frames_rejected_total",
			"Connections closed for a malformed frame, by wire error (bad_magic, bad_crc, oversize, ...).", "reason"),
		kicks: reg.CounterVec("qim_gateway_kicks_total",
			"KICKED frames sent, by reason (replaced, server_drain, credential_expired).", "reason"),
		heartbeatClosed: reg.Counter("qim_gateway_heartbeat_timeouts_total",
			"Connections closed because they were silent longer than the heartbeat timeout."),
		sendRoundTrip: reg.Histogram("qim_gateway_send_round_trip_seconds",
			"From reading a SEND frame to its SEND_ACK or ERROR handed to the socket.", latencyBuckets),
		pullBatchSize: reg.Histogram("qim_gateway_pull_batch_pulls",
			"PULL_MAILBOX requests per PullMailboxBatch call to the MailboxNode.", prometheus.ExponentialBuckets(1, 2, 10)),
		sendBlocked: reg.Counter("qim_gateway_send_blocked_total",
			"Times a connection hit its SEND in-flight limit and stopped reading its socket."),
		writerLost: reg.Counter("qim_gateway_writer_instance_lost_total",
			"Times a ConversationWriter instance was marked unreachable (its conversations move to the next instance until it is back)."),
		backendDepth: reg.GaugeVec("qim_gateway_backend_queue_depth",
			"Requests handed to a backend and not yet answered (writer: SENDs in flight; mailbox, history, session: queued requests).", "backend"),
		requestErrors: reg.CounterVec("qim_gateway_request_errors_total",
			"ERROR frames answered to client requests, by request opcode and contract error code.", "opcode", "code"),
		pushes: reg.CounterVec("qim_gateway_push_targets_total",
			"PushBatch targets by outcome: queued, offline (no live connection), queue_full (dropped), invalid.", "outcome"),
		pushDropped: reg.Counter("qim_gateway_push_frames_dropped_total",
			"PUSH_EVENTS frames dropped because a connection's push queue was full (recovered by PULL_MAILBOX)."),
		orphanOutcomes: reg.Invariant(contract.InvariantGatewaySendOutcomeOrphaned),
		roomJoins: reg.CounterVec("qim_gateway_room_joins_total",
			"JOIN_ROOM answers from RoomWriters, by outcome (joined, refused, unavailable: no link to the owner).", "outcome"),
		roomLeft: reg.CounterVec("qim_gateway_room_left_total",
			"Room memberships ended, by reason (requested, slow_consumer, unavailable: the owner's link was lost, removed: kicked or banned).", "reason"),
		roomSends: reg.CounterVec("qim_gateway_room_sends_total",
			"SENDs to rooms, by outcome (ok, refused, unavailable).", "outcome"),
		roomFrames: reg.Counter("qim_gateway_room_event_frames_total",
			"ROOM_EVENTS frames queued to joined connections (one per member per broadcast batch)."),
		roomLinkLost: reg.Counter("qim_gateway_room_links_lost_total",
			"Times a link to a RoomWriter ended; its rooms' members were told ROOM_LEFT UNAVAILABLE."),
		typing: reg.CounterVec("qim_gateway_typing_total",
			"Typing indicators, by stage: sent (one per recipient handed to its MailboxNode), dropped (above the connection's rate), failed (that call or the group's member read failed), not_member and group_too_large (a group TYPING of a non-member, or in a group above typing_group_max_members), delivered (TYPING_EVENT queued to a connection here).", "stage"),
		reactions: reg.CounterVec("qim_gateway_reaction_events_total",
			"REACTION_EVENTs after a REACT that changed something, by stage: sent (one per participant handed to its MailboxNode), failed (that call failed), delivered (queued to a connection here).", "stage"),
		pushTokens: reg.CounterVec("qim_gateway_push_registrations_total",
			"Offline-push registrations, by outcome: registered, removed (an empty token or LOGOUT), failed (not stored).", "outcome"),
		receipts: reg.CounterVec("qim_gateway_read_receipts_total",
			"Read receipts after a MARK_READ in a direct conversation, by stage: sent (handed to the peer's MailboxNode), failed (that call failed), delivered (READ_RECEIPT queued to a connection of the peer here).", "stage"),
		readSyncs: reg.CounterVec("qim_gateway_read_syncs_total",
			"Read-state sync after MARK_READ, by stage: sent (handed to the user's MailboxNode), failed (that call failed), delivered (SESSION_DELTA queued to another device's connection here).", "stage"),
		rateLimited: reg.CounterVec("qim_gateway_send_rate_limited_total",
			"SENDs refused RATE_LIMITED by a rate limit, by the bucket that refused (connection, sender, tenant).", "scope"),
		rateSyncSeconds: reg.Histogram("qim_gateway_rate_limit_sync_seconds",
			"Duration of one exchange of shared rate-limit buckets with the core Redis (share.lua, up to 256 buckets).", latencyBuckets),
		rateSyncFailures: reg.Counter("qim_gateway_rate_limit_sync_failures_total",
			"Failed exchanges of shared rate-limit buckets; meanwhile each gateway limits alone (fail-open)."),
	}
	m.writerDepth = m.backendDepth.WithLabelValues("writer")
	return m
}

// InvariantCounters names the always-zero counters the gateway registers, read from a scratch
// registry given to newMetrics as New gives it the service's own, so package services can hold
// them against contract.InvariantCounters() without starting the service.
func InvariantCounters() []string {
	reg := obs.NewRegistry("gateway")
	newMetrics(reg)
	return reg.InvariantNames()
}

// limitObserver feeds the rate limiter's events to the metrics.
type limitObserver struct{ m *metrics }

func (o limitObserver) Refused(s ratelimit.Scope) { o.m.rateLimited.WithLabelValues(string(s)).Inc() }

func (o limitObserver) Synced(_ int, took time.Duration, err error) {
	if err != nil {
		o.m.rateSyncFailures.Inc()
		return
	}
	o.m.rateSyncSeconds.Observe(took.Seconds())
}

package services

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/qim-dev/qim/services/admin"
	"github.com/qim-dev/qim/services/archiver"
	"github.com/qim-dev/qim/services/fanout"
	"github.com/qim-dev/qim/services/gateway"
	"github.com/qim-dev/qim/services/internal/config"
	"github.com/qim-dev/qim/services/mailbox"
	"github.com/qim-dev/qim/services/notify"
	"github.com/qim-dev/qim/services/room"
	"github.com/qim-dev/qim/services/session"
	"github.com/qim-dev/qim/services/writer"
)

// program is one runnable service.
type program struct {
	name   string // subcommand
	entity string // the design's name for it
	short  string
	long   string
	vars   []config.Var
	run    func(ctx context.Context, log *slog.Logger) error
	// notInAll leaves the service out of `qim all` (the archiver needs a CQL node, which a
	// one-process demo does not have).
	notInAll bool
}

// programs lists the services in start order (a backend before its callers).
func programs() []program {
	return []program{
		{"writer", "ConversationWriter", "Run the ConversationWriter (durable commit path, Outbox, history reads)",
			"Commits every SEND in Redis (RESERVED → RECORDED), produces it to the qim.outbox topic (OUTBOXED) and\n" +
				"answers SEND_ACK only once it is COMMITTED; serves PULL_HISTORY.",
			describe(writer.DefaultConfig()), runner(writer.FromEnv, writer.New), false},
		{"mailbox", "MailboxNode", "Run the MailboxNode (materialize dispatches, serve PULL_MAILBOX)",
			"Materializes the qim.dispatch log into per-user mailboxes in Redis, advances each shard's watermark\n" +
				"contiguously, pushes to the gateway (best effort) and serves PULL_MAILBOX, the only cursor advance.",
			describe(mailbox.DefaultConfig()), runner(mailbox.FromEnv, mailbox.New), false},
		{"fanout", "FanoutCoordinator", "Run the FanoutCoordinator (Outbox → per-shard dispatch log)",
			"Plans one dispatch per target mailbox shard for every committed Outbox record, produces them to\n" +
				"qim.dispatch and commits its Outbox position only after every dispatch of the batch is acknowledged.",
			describe(fanout.DefaultConfig()), runner(fanout.FromEnv, fanout.New), false},
		{"session", "SessionProjection", "Run the SessionProjection (session lists, unread, MARK_READ)",
			"Projects the dispatch log into per-user conversation sets and serves PULL_SESSION_LIST (exact unread,\n" +
				"computed on read) and MARK_READ.",
			describe(session.DefaultConfig()), runner(session.FromEnv, session.New), false},
		{"room", "RoomWriter", "Run the RoomWriter (chatrooms: room_seq, ring buffer, live broadcast)",
			"Owns the rooms gateways place on it (rendezvous over QIM_ROOM_ADDRS): assigns room_seq, keeps each room's\n" +
				"recent events in an in-process ring buffer for replay, and broadcasts them to the gateways holding joined\n" +
				"connections, one stream per gateway. Nothing survives a restart, by design (ADR-0034).",
			describe(room.DefaultConfig()), runner(room.FromEnv, room.New), false},
		{"gateway", "ConnectionNode", "Run the ConnectionNode (client TCP/TLS and WebSocket listeners, push)",
			"Accepts client connections (TCP or TLS, and WebSocket at /ws; the same binary frames), authenticates\n" +
				"them, routes requests to the backends and pushes mailbox events to sockets.",
			describe(gateway.DefaultConfig()), runner(gateway.FromEnv, gateway.New), false},
		{"notify", "NotificationService", "Run the NotificationService (offline push through FCM, APNs or a webhook)",
			"Follows qim.dispatch and qim.presence; for each recipient of a message with no device online, sends one\n" +
				"notification per registered device (REGISTER_PUSH_TOKEN) to its provider, with retries, at least once\n" +
				"per (message, device) and deduplicated by a done mark. Carries coordinates, never the body.",
			describe(notify.DefaultConfig()), runner(notify.FromEnv, notify.New), false},
		{"archiver", "HistoryArchiver", "Run the HistoryArchiver (Outbox → CQL history archive)",
			"Copies every committed message from the qim.outbox log into the CQL archive (message_record, then\n" +
				"history_index, at LOCAL_QUORUM), commits its Outbox position only after that, and publishes the archive\n" +
				"watermark. The keyspace must be migrated first: qimctl cql migrate.",
			describe(archiver.DefaultConfig()), runner(archiver.FromEnv, archiver.New), true},
		{"admin", "AdminAPI", "Run the admin API (HTTP/JSON: revocations, dev tokens; API keys with scopes, audit log)",
			"Serves the admin API for operators and product backends (docs/admin-api.json): every call needs an API\n" +
				"key holding the route's scope (QIM_ADMIN_KEYS) and is written to the audit log.",
			describe(admin.DefaultConfig()), runner(admin.FromEnv, admin.New), true},
	}
}

// describe lists a Config's variables. A declaration error is a build defect: it panics, and
// this package's tests (which build every program) catch it before a binary ships.
func describe[C any](def C) []config.Var {
	vars, err := config.Describe(def)
	if err != nil {
		panic(fmt.Sprintf("services: %v", err))
	}
	return vars
}

// runner is the body of every service command: configuration from the environment, then Run
// until ctx ends.
func runner[C any, S interface{ Run(context.Context) error }](fromEnv func() (C, error),
	newService func(C, *slog.Logger) (S, error)) func(context.Context, *slog.Logger) error {
	return func(ctx context.Context, log *slog.Logger) error {
		cfg, err := fromEnv()
		if err != nil {
			return err
		}
		svc, err := newService(cfg, log)
		if err != nil {
			return err
		}
		return svc.Run(ctx)
	}
}

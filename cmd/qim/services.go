package main

import (
	"context"
	"log/slog"

	"github.com/qim-dev/qim/services/fanout"
	"github.com/qim-dev/qim/services/gateway"
	"github.com/qim-dev/qim/services/mailbox"
	"github.com/qim-dev/qim/services/session"
	"github.com/qim-dev/qim/services/writer"
)

// services lists the runnable services in start order (backends before their callers).
func services() []service {
	return []service{
		{"writer", "Run the ConversationWriter (durable commit path, Outbox, history reads)",
			`Runs the ConversationWriter. Required: QIM_REDIS_ADDR (AOF, appendfsync always),
QIM_KAFKA_BROKERS. Optional: QIM_WRITER_LISTEN (127.0.0.1:7101), QIM_WRITER_METRICS
(127.0.0.1:9101), QIM_REGION_ID, QIM_WRITER_ID, QIM_WRITER_REQUEST_INFLIGHT_LIMIT, QIM_WRITER_BATCH_MAX.`,
			func(ctx context.Context, log *slog.Logger) error {
				cfg, err := writer.FromEnv()
				if err != nil {
					return err
				}
				s, err := writer.New(cfg, log)
				if err != nil {
					return err
				}
				return s.Run(ctx)
			}},
		{"mailbox", "Run the MailboxNode (materialize dispatches, serve PULL_MAILBOX)",
			`Runs the MailboxNode. Required: QIM_MAILBOX_REDIS_ADDR, QIM_KAFKA_BROKERS. Optional:
QIM_MAILBOX_SHARD_COUNT (64), QIM_MAILBOX_OWNED_SHARDS, QIM_MAILBOX_LISTEN, QIM_MAILBOX_METRICS,
QIM_GATEWAY_PUSH_ADDR.`,
			func(ctx context.Context, log *slog.Logger) error {
				cfg, err := mailbox.FromEnv()
				if err != nil {
					return err
				}
				s, err := mailbox.New(cfg, log)
				if err != nil {
					return err
				}
				return s.Run(ctx)
			}},
		{"fanout", "Run the FanoutCoordinator (Outbox → per-shard dispatch log)",
			`Runs the FanoutCoordinator. Required: QIM_KAFKA_BROKERS. Optional: QIM_MAILBOX_SHARD_COUNT (64),
QIM_FANOUT_BATCH_SIZE (512), QIM_FANOUT_COMMIT_INTERVAL (0: after every batch), QIM_FANOUT_METRICS.`,
			func(ctx context.Context, log *slog.Logger) error {
				cfg, err := fanout.FromEnv()
				if err != nil {
					return err
				}
				s, err := fanout.New(cfg, log)
				if err != nil {
					return err
				}
				return s.Run(ctx)
			}},
		{"session", "Run the SessionProjection (session lists, unread, MARK_READ)",
			`Runs the SessionProjection. Required: QIM_REDIS_ADDR (AOF, appendfsync always),
QIM_KAFKA_BROKERS. Optional: QIM_MAILBOX_SHARD_COUNT (64), QIM_SESSION_LISTEN (127.0.0.1:7104),
QIM_SESSION_METRICS (127.0.0.1:9104), QIM_SESSION_PAGE_SIZE, QIM_SESSION_SNAPSHOT_USERS.`,
			func(ctx context.Context, log *slog.Logger) error {
				cfg, err := session.FromEnv()
				if err != nil {
					return err
				}
				s, err := session.New(cfg, log)
				if err != nil {
					return err
				}
				return s.Run(ctx)
			}},
		{"gateway", "Run the ConnectionNode (client TCP/TLS and WebSocket listeners, push)",
			`Runs the ConnectionNode. Required: QIM_WRITER_ADDR, QIM_MAILBOX_ADDR, QIM_SESSION_ADDR,
QIM_REDIS_ADDR, QIM_TOKEN_SECRET (never logged). Optional: QIM_GATEWAY_LISTEN (127.0.0.1:7000),
QIM_GATEWAY_WS_LISTEN (127.0.0.1:7080), QIM_GATEWAY_PUSH_LISTEN, QIM_GATEWAY_METRICS,
QIM_GATEWAY_TLS_CERT/KEY.`,
			func(ctx context.Context, log *slog.Logger) error {
				cfg, err := gateway.FromEnv()
				if err != nil {
					return err
				}
				s, err := gateway.New(cfg, log)
				if err != nil {
					return err
				}
				return s.Run(ctx)
			}},
	}
}

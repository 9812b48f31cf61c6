// Package stack starts and stops the real servers Q-IM is tested against: two Redis instances
// (core commit facts with appendfsync always; mailbox with everysec), one Kafka-API broker and,
// on request, one CQL node. Tests and gates never mock these; they get a Stack instead.
package stack

import (
	"context"
	"errors"
	"fmt"

	"github.com/qim-dev/qim/contract"
)

// Server names used in Endpoints, logs and errors.
const (
	ServerRedisCore    = "redis-core"
	ServerRedisMailbox = "redis-mailbox"
	ServerKafka        = "kafka"
	ServerCQL          = "cql"
)

// Topics every stack creates before it reports ready (re-exported from contract/, which owns
// topic names).
const (
	TopicOutbox   = contract.TopicOutbox
	TopicDispatch = contract.TopicDispatch
	TopicPresence = contract.TopicPresence
	TopicFeed     = contract.TopicFeed
)

// Endpoints is what a running stack hands to services and tests. It is printed by
// `qim-gate stack up` as env lines or JSON, so field names are part of the CLI contract.
type Endpoints struct {
	Project        string   `json:"project"`         // qim-it-<id>
	Dir            string   `json:"dir"`             // project directory (data, logs, pid files)
	Provider       string   `json:"provider"`        // "process" or "containers"
	RedisCore      string   `json:"redis_core"`      // host:port
	RedisMailbox   string   `json:"redis_mailbox"`   // host:port
	KafkaBrokers   []string `json:"kafka_brokers"`   // host:port list
	CQL            string   `json:"cql,omitempty"`   // host:port, empty unless requested
	DispatchShards int      `json:"dispatch_shards"` // partitions of qim.dispatch
	// Secure is set when the stack was started WithSecureStores: every store then refuses
	// clients without TLS and these credentials (RedisOptions, KafkaOpts, CQLClusterConfig).
	Secure *SecureEndpoints `json:"secure,omitempty"`
}

// Stack is one isolated set of servers. Up blocks until every server passed its readiness check
// or returns the first failure (with the failing server's log tail). Down stops exactly the
// processes or containers this stack started and removes its project directory; it is safe to
// call after a failed Up and more than once.
type Stack interface {
	Up(ctx context.Context) error
	Down(ctx context.Context) error
	Endpoints() Endpoints
	// Logs returns the last n lines of one server's log (ServerRedisCore, ...).
	Logs(server string, n int) (string, error)
	// Check reports the first server that is no longer running as a *ServerDiedError, so a test
	// whose server was killed fails naming that server instead of timing out.
	Check(ctx context.Context) error
}

// ServerDiedError says which server stopped and what it last logged.
type ServerDiedError struct {
	Server  string
	Detail  string // exit status or probe error
	LogTail string
}

func (e *ServerDiedError) Error() string {
	return fmt.Sprintf("stack: %s is down (%s); last log lines:\n%s", e.Server, e.Detail, e.LogTail)
}

// NotReadyError says a server did not pass its readiness check in time (or is misconfigured);
// the process is still running, unlike ServerDiedError.
type NotReadyError struct {
	Server  string
	Detail  string // timeout and last probe error
	LogTail string
}

func (e *NotReadyError) Error() string {
	return fmt.Sprintf("stack: %s not ready (%s); last log lines:\n%s", e.Server, e.Detail, e.LogTail)
}

// ErrNotRunning is returned by Check after Down.
var ErrNotRunning = errors.New("stack: not running (Down was called)")

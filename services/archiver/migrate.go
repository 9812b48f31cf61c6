package archiver

import (
	"context"

	"github.com/qim-dev/qim/services/internal/cqlstore"
	"github.com/qim-dev/qim/services/internal/storeauth"
)

// MigrateConfig says which archive to migrate and how to create it (`qimctl cql migrate`).
type MigrateConfig struct {
	Hosts           []string
	Keyspace        string // "" = DefaultKeyspace
	NoPeerDiscovery bool
	// ReplicationFactor and Datacenter apply only to a keyspace that does not exist yet.
	ReplicationFactor int
	Datacenter        string
	// Auth is the CQL login and TLS (zero: neither).
	Auth CQLAuth
}

// CQLAuth is a CQL login and client TLS: QIM_CQL_USERNAME, QIM_CQL_PASSWORD(_FILE),
// QIM_CQL_TLS_CA and QIM_CQL_TLS_SERVER_NAME.
type CQLAuth = storeauth.CQL

// RedisAuth and KafkaAuth are the Redis and Kafka logins and TLS of the archiver's tools
// (backfill, audit), read from the services' variables by services.StoreAuthFrom.
type (
	RedisAuth = storeauth.Redis
	KafkaAuth = storeauth.Kafka
)

// DefaultKeyspace is the archive keyspace when none is configured.
const DefaultKeyspace = cqlstore.DefaultKeyspace

// SchemaVersion is the archive schema version this binary reads and writes.
func SchemaVersion() int { return cqlstore.SchemaVersion() }

// Migrate brings the archive keyspace to SchemaVersion and returns the versions it applied (see
// cqlstore.Migrate: idempotent, refuses a newer schema).
func Migrate(ctx context.Context, c MigrateConfig) ([]int, error) {
	return cqlstore.Migrate(ctx, cqlstore.Config{Hosts: c.Hosts, Keyspace: c.Keyspace, NoPeerDiscovery: c.NoPeerDiscovery, Auth: c.Auth},
		cqlstore.MigrateOptions{ReplicationFactor: c.ReplicationFactor, Datacenter: c.Datacenter})
}

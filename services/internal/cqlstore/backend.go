package cqlstore

import (
	"context"
	"fmt"

	"github.com/qim-dev/qim/services/internal/storeauth"
)

// MessageStore backends (QIM_MESSAGE_STORE_BACKEND).
const (
	BackendTiered = "tiered" // Redis hot tier trimmed below the archive watermark + this CQL archive
	BackendRedis  = "redis"  // development: no archive, no trim, history kept in Redis forever
)

// BackendConfig is the history backend of a service that reads history (the writer's
// PULL_HISTORY, the SessionProjection's tails): one field per QIM_* variable, embedded in each
// service's Config so the two read the same variables the same way.
type BackendConfig struct {
	// Backend is tiered or redis. Unset, it is tiered when a CQL contact point is configured and
	// redis otherwise, so a deployment with an archive never silently reads without it.
	Backend string `env:"QIM_MESSAGE_STORE_BACKEND" doc:"tiered (Redis hot tier + CQL archive; the default when QIM_CQL_HOSTS is set) or redis (development only: no archive, no trim, history kept in Redis forever)"`
	// CQLHosts are the archive's contact points (tiered). The keyspace must be at this binary's
	// schema version (qimctl cql migrate).
	CQLHosts []string `env:"QIM_CQL_HOSTS" doc:"CQL contact points (host:port,…) of the history archive (tiered backend)"`
	// CQLKeyspace holds the archive's tables.
	CQLKeyspace string `env:"QIM_CQL_KEYSPACE" doc:"CQL keyspace of the history archive"`
	// CQLNoPeerDiscovery connects to the contact points only (a node behind a mapped port whose
	// advertised address is unreachable from here).
	CQLNoPeerDiscovery bool `env:"QIM_CQL_NO_PEER_DISCOVERY" doc:"connect to the contact points only, without discovering the ring"`
	// CQLAuth is the archive's login and TLS (all optional).
	CQLAuth storeauth.CQL
}

// Validate resolves an unset Backend and rejects what cannot work.
func (c *BackendConfig) Validate() error {
	if c.Backend == "" {
		c.Backend = BackendRedis
		if len(c.CQLHosts) > 0 {
			c.Backend = BackendTiered
		}
	}
	switch c.Backend {
	case BackendRedis:
		return nil
	case BackendTiered:
		cfg := c.store()
		if len(cfg.Hosts) == 0 {
			return fmt.Errorf("%w: QIM_MESSAGE_STORE_BACKEND=tiered needs the archive: set QIM_CQL_HOSTS", ErrConfig)
		}
		return cfg.Validate()
	}
	return fmt.Errorf("%w: QIM_MESSAGE_STORE_BACKEND=%q is neither %s nor %s", ErrConfig, c.Backend, BackendTiered, BackendRedis)
}

// Tiered reports the tiered backend; call after Validate.
func (c *BackendConfig) Tiered() bool { return c.Backend == BackendTiered }

func (c *BackendConfig) store() Config {
	return Config{Hosts: c.CQLHosts, Keyspace: c.CQLKeyspace, NoPeerDiscovery: c.CQLNoPeerDiscovery, Auth: c.CQLAuth}
}

// Open connects to the archive of a tiered backend (refusing a keyspace at another schema
// version, like the archiver). Call only when Tiered.
func (c *BackendConfig) Open(ctx context.Context) (*Store, error) {
	st, err := Open(ctx, c.store())
	if err != nil {
		return nil, fmt.Errorf("history archive: %w", err)
	}
	return st, nil
}

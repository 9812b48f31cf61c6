package cqlstore

import (
	"fmt"
	"net"
	"regexp"
	"time"

	"github.com/qim-dev/qim/services/internal/storeauth"
)

// Defaults of Config.
const (
	DefaultKeyspace    = "qim"
	DefaultTimeout     = 5 * time.Second
	DefaultConcurrency = 64
	maxConcurrency     = 1024
)

// keyspaceName is CQL's unquoted identifier rule; the name is spliced into DDL, so nothing else
// is accepted.
var keyspaceName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,47}$`)

// Config says where the archive is and how hard to push it.
type Config struct {
	// Hosts are contact points, host:port (the native protocol port, 9042 by default).
	Hosts []string
	// Keyspace holds every table of the archive; default "qim".
	Keyspace string
	// Timeout bounds one statement; default 5 s. A longer timeout rides out a slow compaction
	// on the node; a shorter one fails a batch sooner, and the archiver replays it anyway.
	Timeout time.Duration
	// Concurrency is the most statements in flight per Put, default 64. Higher fills the
	// node's write path with fewer round trips per batch; it is bounded because every
	// statement in flight holds a stream on a connection and a little node memory.
	Concurrency int
	// NoPeerDiscovery connects to the contact points only, default off (discover the ring, and
	// route each row to a replica of its partition). Turn it on when the node's advertised
	// address is not reachable from here, e.g. a single node behind a mapped port.
	NoPeerDiscovery bool
	// Auth is the PasswordAuthenticator login and the client TLS (storeauth); zero: neither.
	Auth storeauth.CQL
}

// Validate fills defaults and rejects what cannot work.
func (c *Config) Validate() error {
	if len(c.Hosts) == 0 {
		return fmt.Errorf("%w: no CQL contact point", ErrConfig)
	}
	if err := c.Auth.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	for _, h := range c.Hosts {
		if _, _, err := net.SplitHostPort(h); err != nil {
			return fmt.Errorf("%w: CQL contact point %q: %v", ErrConfig, h, err)
		}
	}
	if c.Keyspace == "" {
		c.Keyspace = DefaultKeyspace
	}
	if !keyspaceName.MatchString(c.Keyspace) {
		return fmt.Errorf("%w: keyspace %q is not a lower-case CQL identifier", ErrConfig, c.Keyspace)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	switch {
	case c.Timeout < 0:
		return fmt.Errorf("%w: negative CQL timeout %v", ErrConfig, c.Timeout)
	case c.Concurrency < 1 || c.Concurrency > maxConcurrency:
		return fmt.Errorf("%w: CQL concurrency %d not in [1, %d]", ErrConfig, c.Concurrency, maxConcurrency)
	}
	return nil
}

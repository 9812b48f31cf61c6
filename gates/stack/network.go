package stack

import (
	"context"
	"fmt"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"
)

// Host names of the servers on a containers stack's own network (WithNetwork), the names
// compose.integration.yml gives them. The broker keeps Redpanda's name whatever serves the
// Kafka protocol there; PortKafkaInternal is the listener containers dial.
const (
	HostRedisCore     = "redis-core"
	HostRedisMailbox  = "redis-mailbox"
	HostKafka         = "redpanda"
	HostCQL           = "scylla"
	PortKafkaInternal = "9092"
)

// Networked is implemented by the containers provider: the name of the stack's own network
// ("" unless made WithNetwork), for containers that should reach the servers by host name.
type Networked interface {
	Network() string
}

func (s *containersStack) Network() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nw == nil {
		return ""
	}
	return s.nw.Name
}

// createNetwork makes the stack's network WithNetwork, before any server starts.
func (s *containersStack) createNetwork(ctx context.Context) error {
	if !s.cfg.network {
		return nil
	}
	nw, err := network.New(ctx, network.WithLabels(map[string]string{"dev.qim.project": s.name}))
	if err != nil {
		return fmt.Errorf("stack: network: %w", err)
	}
	s.mu.Lock()
	s.nw = nw
	s.mu.Unlock()
	return nil
}

// removeNetwork removes it after the servers; a container still attached (one the stack did
// not start) makes it fail, named.
func (s *containersStack) removeNetwork() error {
	s.mu.Lock()
	nw := s.nw
	s.nw = nil
	s.mu.Unlock()
	if nw == nil {
		return nil
	}
	if err := nw.Remove(context.Background()); err != nil {
		return fmt.Errorf("stack: remove network %s: %w", nw.Name, err)
	}
	return nil
}

// onNetwork attaches a server to the stack's network under alias (no-op without one).
func (s *containersStack) onNetwork(alias string) testcontainers.CustomizeRequestOption {
	s.mu.Lock()
	nw := s.nw
	s.mu.Unlock()
	if nw == nil {
		return func(*testcontainers.GenericContainerRequest) error { return nil }
	}
	return network.WithNetwork([]string{alias}, nw)
}

// ProjectPrefix starts every stack's project name (qim-it-<id>); compose.integration.yml's
// project is named the same way.
const ProjectPrefix = projectPrefix

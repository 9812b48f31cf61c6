package svc

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/qim-dev/qim/contract"
)

// A deployment of several instances (ADR-0026) runs N ConversationWriters, N MailboxNodes, N
// SessionProjections and N ConnectionNodes, each on its own loopback ports, beside one
// FanoutCoordinator (the Outbox has one partition). The gateways find each other and the
// MailboxNodes find them through qim.presence (ADR-0027). Instance 1 keeps the service's name,
// so every caller that names "writer" keeps meaning a writer; instance k ≥ 2 is "writer-k".

// Scaled lists the services a deployment of several instances runs N of.
var Scaled = []string{Writer, Mailbox, Session, Room, Gateway}

// ErrInstances is returned (wrapped) for an instance count a deployment cannot run.
var ErrInstances = errors.New("svc: instances")

// InstanceName is the process name of instance k (from 1) of service.
func InstanceName(service string, k int) string {
	if k <= 1 {
		return service
	}
	return service + "-" + strconv.Itoa(k)
}

// ServiceOf splits a process name into its service and instance number (1 for the service's
// own name): "mailbox-2" is the MailboxNode's second instance.
func ServiceOf(name string) (service string, k int) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name, 1
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n < 2 || !isScaled(name[:i]) {
		return name, 1
	}
	return name[:i], n
}

func isScaled(service string) bool {
	for _, s := range Scaled {
		if s == service {
			return true
		}
	}
	return false
}

// Presence reports whether the deployment's gateways publish qim.presence (false only for a
// binary from before the PresenceDirectory, which then also speaks no Kafka from its gateway).
func (s *Set) Presence() bool { return knowsPresence(s.bin) }

// Rooms reports whether the deployment runs RoomWriters (false only for a binary from before
// them, whose gateway then gets no QIM_ROOM_ADDRS).
func (s *Set) Rooms() bool { return knows(s.bin, Gateway, "QIM_ROOM_ADDRS") }

// Notifies reports whether the deployment runs the NotificationService (false only for a binary
// from before it).
func (s *Set) Notifies() bool { return knows(s.bin, Notify, "QIM_NOTIFY_GROUP") }

// runs reports whether the deployment runs service at all (a baseline binary may predate it).
func (s *Set) runs(service string) bool {
	switch service {
	case Room:
		return s.Rooms()
	case Notify:
		return s.Notifies()
	}
	return true
}

// Instances is how many instances of each scaled service the deployment runs.
func (s *Set) Instances() int { return s.n }

// Instance lists the process names of one service's instances, instance 1 first.
func (s *Set) Instance(service string) []string {
	if !isScaled(service) {
		return []string{service}
	}
	out := make([]string, s.n)
	for k := 1; k <= s.n; k++ {
		out[k-1] = InstanceName(service, k)
	}
	return out
}

// GatewayTCPs are every gateway's client TCP address, instance 1 first: load and scenarios
// spread their clients over them.
func (s *Set) GatewayTCPs() []string {
	names := s.Instance(Gateway)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = s.Addrs.TCP[n]
	}
	return out
}

// checkInstances refuses counts the deployment cannot run before any port is taken.
func checkInstances(bin string, n, shards int) error {
	if n == 1 {
		return nil
	}
	if n < 1 {
		return fmt.Errorf("%w: %d (want at least 1)", ErrInstances, n)
	}
	if _, err := contract.NewShardCount(shards); err != nil {
		return fmt.Errorf("%w: the stack's dispatch shards: %w", ErrInstances, err)
	}
	if n > shards {
		return fmt.Errorf("%w: %d instances for %d dispatch shards (each instance needs a shard)", ErrInstances, n, shards)
	}
	if !knowsPresence(bin) {
		return fmt.Errorf("%w: %s predates several gateways (its gateway publishes no qim.presence): deploy it with 1", ErrInstances, bin)
	}
	return nil
}

package svc

import (
	"fmt"
	"maps"
	"strings"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/stack"
)

// The deployment of the Q-IM services (ADR-0026, ADR-0027, ADR-0028): Deployment describes it
// once; ContainerDeployment renders it for containers (StartContainers, and
// compose.integration.yml, generated from it by ComposeServices) and Set.Env for the processes
// `qim-gate run --instances N` deploys. mTLS with one development certificate per instance.
const (
	PortWriter      = "7001"
	PortMailbox     = "7002"
	PortSession     = "7003"
	PortGatewayPush = "7004"
	PortRoom        = "7005"
	PortGatewayTCP  = "7100"
	PortGatewayWS   = "7101"
	PortMetrics     = "9100" // /metrics and /healthz of every service

	// CertDir is where the development certificate set is mounted in every service container.
	CertDir = "/certs"
)

// DeployedService is one container of the deployment.
type DeployedService struct {
	Name     string            // container and host name: writer-1, …, fanout, archiver
	Service  string            // the qim subcommand it runs
	Identity string            // its certificate in the development set ("" when it serves no RPC)
	Token    bool              // reads the gateways' QIM_TOKEN_SECRET
	Env      map[string]string // every variable but the certificate set's and the token secret
}

// Addressing is how one kind of deployment names its processes and reaches them: containers by
// host name on fixed ports (containerAddressing), processes on the loopback ports a Set chose
// (processAddressing). Deployment describes the topology once; each kind only renders it.
type Addressing interface {
	// Name is the process or container name of instance k (from 1) of service.
	Name(service string, k int) string
	// Listen is where name listens for port, one of the Port* constants; Dial is where the
	// other processes reach it there.
	Listen(name, port string) string
	Dial(name, port string) string
	// The backends: the core and mailbox Redis, the broker list, the CQL contact points.
	RedisCore() string
	RedisMailbox() string
	Kafka() string
	CQL() string
}

// ContainerDeployment lists the containers of n instances over shards mailbox shards, in start
// order (a backend before its callers); cql adds the HistoryArchiver.
// The writers and SessionProjections stay on the redis history backend: the CQL node is an
// optional compose profile, and they must start without it (docs/deployment.md says how a
// tiered deployment sets them).
func ContainerDeployment(n int, shards contract.ShardCount, cql bool) []DeployedService {
	return Deployment(Topology{Instances: n, Shards: shards, Archiver: cql}, containerAddressing{})
}

// Topology is what a deployment runs.
type Topology struct {
	Instances int                 // of each scaled service (writer, mailbox, session, room, gateway)
	Shards    contract.ShardCount // mailbox shards
	Archiver  bool                // a CQL node: the HistoryArchiver runs
	// Tiered: the writers and SessionProjections read the archive too (QIM_CQL_HOSTS, which
	// makes their history backend tiered: hot tier trimmed, older history read from CQL).
	Tiered bool
}

// Deployment is the one description of the services' topology: n ConversationWriters,
// MailboxNodes and SessionProjections, each MailboxNode and SessionProjection owning the shard
// range its place in the gateways' address lists routes to it, one FanoutCoordinator, n gateways
// the NotificationService and, with an archive, the HistoryArchiver; in start order, every process with exactly the variables
// its program reads. The container deployment (and compose.integration.yml, generated from it)
// and the process deployment (Set.Env) are renderings of it.
func Deployment(t Topology, at Addressing) []DeployedService {
	n, shards := t.Instances, t.Shards
	core := func(extra map[string]string) map[string]string {
		env := map[string]string{"QIM_REDIS_ADDR": at.RedisCore(), "QIM_KAFKA_BROKERS": at.Kafka(),
			"QIM_MAILBOX_SHARD_COUNT": fmt.Sprint(int(shards))}
		maps.Copy(env, extra)
		return env
	}
	identity := func(service, name string) string { // services.DevIdentities' names
		if n == 1 {
			return service
		}
		return name
	}
	list := func(service, port string) string {
		addrs := make([]string, n)
		for k := 1; k <= n; k++ {
			addrs[k-1] = at.Dial(at.Name(service, k), port)
		}
		return strings.Join(addrs, ",")
	}
	var out []DeployedService
	for _, service := range []string{Writer, Mailbox, Session} {
		for k := 1; k <= n; k++ {
			name := at.Name(service, k)
			d := DeployedService{Name: name, Service: service, Identity: identity(service, name)}
			owned := shards.InstanceShardSpec(k-1, n)
			metrics := at.Listen(name, PortMetrics)
			tiered := map[string]string{}
			if t.Tiered {
				tiered["QIM_CQL_HOSTS"] = at.CQL()
			}
			switch service {
			case Writer:
				d.Env = core(map[string]string{"QIM_WRITER_LISTEN": at.Listen(name, PortWriter), "QIM_WRITER_METRICS": metrics})
				maps.Copy(d.Env, tiered)
			case Mailbox:
				d.Env = map[string]string{"QIM_MAILBOX_REDIS_ADDR": at.RedisMailbox(), "QIM_KAFKA_BROKERS": at.Kafka(),
					"QIM_MAILBOX_SHARD_COUNT": fmt.Sprint(int(shards)), "QIM_MAILBOX_OWNED_SHARDS": owned,
					"QIM_MAILBOX_LISTEN": at.Listen(name, PortMailbox), "QIM_MAILBOX_METRICS": metrics}
			case Session:
				d.Env = core(map[string]string{"QIM_SESSION_OWNED_SHARDS": owned,
					"QIM_SESSION_LISTEN": at.Listen(name, PortSession), "QIM_SESSION_METRICS": metrics})
				maps.Copy(d.Env, tiered)
			}
			out = append(out, d)
		}
	}
	for k := 1; k <= n; k++ {
		name := at.Name(Room, k)
		out = append(out, DeployedService{Name: name, Service: Room, Identity: identity(Room, name), Env: map[string]string{
			"QIM_REDIS_ADDR": at.RedisCore(), "QIM_ROOM_LISTEN": at.Listen(name, PortRoom), "QIM_ROOM_METRICS": at.Listen(name, PortMetrics)}})
	}
	out = append(out, DeployedService{Name: at.Name(Fanout, 1), Service: Fanout, Env: map[string]string{
		"QIM_KAFKA_BROKERS": at.Kafka(), "QIM_MAILBOX_SHARD_COUNT": fmt.Sprint(int(shards)),
		"QIM_FANOUT_METRICS": at.Listen(at.Name(Fanout, 1), PortMetrics)}})
	for k := 1; k <= n; k++ {
		name := at.Name(Gateway, k)
		out = append(out, DeployedService{Name: name, Service: Gateway, Identity: identity(Gateway, name), Token: true, Env: core(map[string]string{
			"QIM_WRITER_ADDRS": list(Writer, PortWriter), "QIM_MAILBOX_ADDRS": list(Mailbox, PortMailbox),
			"QIM_SESSION_ADDRS":          list(Session, PortSession),
			"QIM_ROOM_ADDRS":             list(Room, PortRoom),
			"QIM_GATEWAY_LISTEN":         at.Listen(name, PortGatewayTCP),
			"QIM_GATEWAY_WS_LISTEN":      at.Listen(name, PortGatewayWS),
			"QIM_GATEWAY_PUSH_LISTEN":    at.Listen(name, PortGatewayPush),
			"QIM_GATEWAY_PUSH_ADVERTISE": at.Dial(name, PortGatewayPush),
			"QIM_GATEWAY_METRICS":        at.Listen(name, PortMetrics)})})
	}
	out = append(out, DeployedService{Name: at.Name(Notify, 1), Service: Notify, Identity: Notify, Env: core(map[string]string{
		"QIM_SESSION_ADDRS": list(Session, PortSession), "QIM_NOTIFY_FEED_TOPIC": contract.TopicFeed,
		"QIM_NOTIFY_METRICS": at.Listen(at.Name(Notify, 1), PortMetrics)})})
	if t.Archiver {
		name := at.Name(Archiver, 1)
		out = append(out, DeployedService{Name: name, Service: Archiver, Env: map[string]string{
			"QIM_REDIS_ADDR": at.RedisCore(), "QIM_KAFKA_BROKERS": at.Kafka(),
			"QIM_CQL_HOSTS": at.CQL(), "QIM_ARCHIVER_METRICS": at.Listen(name, PortMetrics)}})
	}
	return out
}

// containerAddressing: every container has its own network namespace, so every service listens
// on the same fixed ports and is found by its name on the deployment's network; scaled services
// are named service-k from 1, the others by the service.
type containerAddressing struct{}

func (containerAddressing) Name(service string, k int) string {
	if !isScaled(service) {
		return service
	}
	return fmt.Sprintf("%s-%d", service, k)
}
func (containerAddressing) Listen(_, port string) string  { return "0.0.0.0:" + port }
func (containerAddressing) Dial(name, port string) string { return name + ":" + port }
func (containerAddressing) RedisCore() string             { return stack.HostRedisCore + ":6379" }
func (containerAddressing) RedisMailbox() string          { return stack.HostRedisMailbox + ":6379" }
func (containerAddressing) Kafka() string                 { return stack.HostKafka + ":" + stack.PortKafkaInternal }
func (containerAddressing) CQL() string                   { return stack.HostCQL + ":9042" }

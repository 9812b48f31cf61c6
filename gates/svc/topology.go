package svc

import (
	"fmt"
	"strings"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/stack"
)

// The container deployment of the Q-IM services: one description that compose.integration.yml
// is held to (TestComposeDescribesTheHarnessTopology) and StartContainers starts beside a
// containers stack (ADR-0028). It is the topology `qim-gate run --instances N` deploys as processes (ADR-0026,
// ADR-0027): N ConversationWriters, MailboxNodes, SessionProjections and gateways, one
// FanoutCoordinator and, with a CQL node, one HistoryArchiver; mTLS with one development
// certificate per instance. Every container has its own network namespace, so every service
// listens on the same fixed ports and is found by its name on the deployment's network.
const (
	PortWriter      = "7001"
	PortMailbox     = "7002"
	PortSession     = "7003"
	PortGatewayPush = "7004"
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

// ContainerDeployment lists the containers of n instances over shards mailbox shards, in start order (a
// backend before its callers); cql adds the HistoryArchiver.
func ContainerDeployment(n int, shards contract.ShardCount, cql bool) []DeployedService {
	kafka := stack.HostKafka + ":" + stack.PortKafkaInternal
	core := func(extra map[string]string) map[string]string {
		env := map[string]string{"QIM_REDIS_ADDR": stack.HostRedisCore + ":6379", "QIM_KAFKA_BROKERS": kafka,
			"QIM_MAILBOX_SHARD_COUNT": fmt.Sprint(int(shards))}
		for k, v := range extra {
			env[k] = v
		}
		return env
	}
	metrics := "0.0.0.0:" + PortMetrics
	var out []DeployedService
	identity := func(service, name string) string { // services.DevIdentities' names
		if n == 1 {
			return service
		}
		return name
	}
	list := func(service, port string) string {
		addrs := make([]string, n)
		for k := 1; k <= n; k++ {
			addrs[k-1] = fmt.Sprintf("%s-%d:%s", service, k, port)
		}
		return strings.Join(addrs, ",")
	}
	for _, service := range []string{Writer, Mailbox, Session} {
		for k := 1; k <= n; k++ {
			name := fmt.Sprintf("%s-%d", service, k)
			d := DeployedService{Name: name, Service: service, Identity: identity(service, name)}
			owned := shards.InstanceShardSpec(k-1, n)
			switch service {
			case Writer:
				d.Env = core(map[string]string{"QIM_WRITER_LISTEN": "0.0.0.0:" + PortWriter, "QIM_WRITER_METRICS": metrics})
			case Mailbox:
				d.Env = map[string]string{"QIM_MAILBOX_REDIS_ADDR": stack.HostRedisMailbox + ":6379", "QIM_KAFKA_BROKERS": kafka,
					"QIM_MAILBOX_SHARD_COUNT": fmt.Sprint(int(shards)), "QIM_MAILBOX_OWNED_SHARDS": owned,
					"QIM_MAILBOX_LISTEN": "0.0.0.0:" + PortMailbox, "QIM_MAILBOX_METRICS": metrics}
			case Session:
				d.Env = core(map[string]string{"QIM_SESSION_OWNED_SHARDS": owned,
					"QIM_SESSION_LISTEN": "0.0.0.0:" + PortSession, "QIM_SESSION_METRICS": metrics})
			}
			out = append(out, d)
		}
	}
	out = append(out, DeployedService{Name: Fanout, Service: Fanout, Env: map[string]string{
		"QIM_KAFKA_BROKERS": kafka, "QIM_MAILBOX_SHARD_COUNT": fmt.Sprint(int(shards)), "QIM_FANOUT_METRICS": metrics}})
	for k := 1; k <= n; k++ {
		name := fmt.Sprintf("%s-%d", Gateway, k)
		out = append(out, DeployedService{Name: name, Service: Gateway, Identity: identity(Gateway, name), Token: true, Env: core(map[string]string{
			"QIM_WRITER_ADDRS": list(Writer, PortWriter), "QIM_MAILBOX_ADDRS": list(Mailbox, PortMailbox),
			"QIM_SESSION_ADDRS":       list(Session, PortSession),
			"QIM_GATEWAY_LISTEN":      "0.0.0.0:" + PortGatewayTCP,
			"QIM_GATEWAY_WS_LISTEN":   "0.0.0.0:" + PortGatewayWS,
			"QIM_GATEWAY_PUSH_LISTEN": "0.0.0.0:" + PortGatewayPush, "QIM_GATEWAY_PUSH_ADVERTISE": name + ":" + PortGatewayPush,
			"QIM_GATEWAY_METRICS": metrics})})
	}
	if cql {
		out = append(out, DeployedService{Name: Archiver, Service: Archiver, Env: map[string]string{
			"QIM_REDIS_ADDR": stack.HostRedisCore + ":6379", "QIM_KAFKA_BROKERS": kafka,
			"QIM_CQL_HOSTS": stack.HostCQL + ":9042", "QIM_ARCHIVER_METRICS": metrics}})
	}
	return out
}

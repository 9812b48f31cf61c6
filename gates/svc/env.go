package svc

import (
	"maps"
	"slices"
	"strings"

	"github.com/qim-dev/qim/contract"
)

// Env is the environment of one process (also what `qim-gate` prints for people): name is a
// process name, an instance's own (writer-2) included, or OneProcessName. It is the process's
// entry of Deployment, rendered on the Set's loopback ports, plus what only a process deployment
// passes inline: the token secret to the programs that read it, the process's certificate set
// and the Set's extra variables. `qim all` gets the union of instance 1 of the five services it
// runs. A binary from an older commit (an A/B baseline) gets the names it knows (baseline.go).
func (s *Set) Env(name string) []string {
	service, k := ServiceOf(name)
	vars, token := map[string]string{}, false
	for _, d := range Deployment(s.topology(), processAddressing{s}) {
		ds, dk := ServiceOf(d.Name)
		own := ds == service && dk == k
		allOf := name == OneProcessName && dk == 1 && slices.Contains(Order, ds) && s.runs(ds)
		if own || allOf {
			maps.Copy(vars, d.Env)
			token = token || d.Token
		}
	}
	if token {
		vars["QIM_TOKEN_SECRET"] = s.Addrs.TokenSecret
		s.identityEnv(vars)
	}
	if service == Gateway || name == OneProcessName {
		s.rateLimitEnv(vars)
	}
	if service == Writer || service == Room || name == OneProcessName {
		s.moderationEnv(service, vars)
	}
	if service == Notify || name == OneProcessName {
		s.pushEnv(vars)
	}
	s.baselineEnv(vars)
	s.storeEnv(service, vars)
	s.reroute(name, vars)
	env := make([]string, 0, len(vars))
	for _, key := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, key+"="+vars[key])
	}
	env = append(env, s.rpcEnv(name)...)
	return append(env, s.extra...)
}

// topology is what the Set deploys: a CQL node makes the history tiered on every writer and
// SessionProjection and runs the HistoryArchiver.
func (s *Set) topology() Topology {
	cql := s.ep.CQL != ""
	return Topology{Instances: s.n, Shards: contract.ShardCount(s.ep.DispatchShards), Archiver: cql, Tiered: cql}
}

// processAddressing renders Deployment for processes on one host: instance 1 keeps the
// service's name, every process listens and is reached on the loopback port the Set chose.
type processAddressing struct{ s *Set }

func (processAddressing) Name(service string, k int) string { return InstanceName(service, k) }

func (p processAddressing) Listen(name, port string) string {
	a := p.s.Addrs
	switch port {
	case PortGatewayTCP:
		return a.TCP[name]
	case PortGatewayWS:
		return a.WS[name]
	case PortMetrics:
		return a.Metrics[name]
	}
	return a.RPC[name] // a writer's, MailboxNode's or SessionProjection's RPC, a gateway's Push
}

func (p processAddressing) Dial(name, port string) string { return p.Listen(name, port) }
func (p processAddressing) RedisCore() string             { return p.s.ep.RedisCore }
func (p processAddressing) RedisMailbox() string          { return p.s.ep.RedisMailbox }
func (p processAddressing) Kafka() string                 { return strings.Join(p.s.ep.KafkaBrokers, ",") }
func (p processAddressing) CQL() string                   { return p.s.ep.CQL }

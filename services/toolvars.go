package services

import "github.com/qim-dev/qim/services/internal/config"

// toolVar is a QIM_* variable read by something other than a service's Config: the failpoint
// build of the services, the harness, the load tools, the scripts. They are listed here so the
// environment check knows them (qim-gate prints several for `eval`, and the harness passes its
// whole environment to the services it starts) and docs/config.md documents them.
type toolVar struct {
	config.Var
	readBy string
}

// toolVars must list every QIM_* name in the repository that is not a service variable;
// TestEveryVariableIsDocumented scans the sources and fails on one that is missing.
var toolVars = []toolVar{
	{config.Var{Name: "QIM_FAILPOINT", Type: "string", Doc: "failpoint to arm (crash tests); only in binaries built with -tags failpoints"}, "services (failpoints build)"},
	{config.Var{Name: "QIM_FAILPOINT_SKIP", Type: "int", Default: "0", Doc: "hits of the armed failpoint to pass before it fires"}, "services (failpoints build)"},
	{config.Var{Name: "QIM_FAILPOINT_ARM", Type: "string", Doc: "\"signal\": the armed failpoint stays dormant until the process gets SIGUSR1 (the chaos matrix fires it mid-load)"}, "services (failpoints build)"},
	{config.Var{Name: "QIM_WRITE_REAL_HISTORY", Type: "bool", Default: "false", Doc: "write the history of loadgen's integration run to chaos/check/testdata/real-run.log.zst (refreshing the checker's recorded test data)"}, "go test ./loadgen -run TestIntegrationHistory"},
	{config.Var{Name: "QIM_TOKEN", Type: "secret", Secret: true, Doc: "a client's access token (instead of --token-file)"}, "qim-desktop"},
	{config.Var{Name: "QIM_GATEWAY", Type: "string", Doc: "gateway address written by the desktop dev deployment for the tmux demo"}, "scripts/desktop-tmux.sh, qim-desktop devdeploy"},
	{config.Var{Name: "QIM_IT_ENDPOINTS", Type: "string", Doc: "reuse a running stack (its endpoints.json or project directory) instead of starting one per test package"}, "go test (gates/itest)"},
	{config.Var{Name: "QIM_IMAGE", Type: "string", Default: "qim-server:dev", Doc: "the Q-IM service image built by scripts/image.sh and run by compose.integration.yml (and by gates/svc's TestContainerDeployment, which skips without it)"}, "scripts/image.sh, scripts/compose.sh, compose.integration.yml, go test ./gates/svc"},
	{config.Var{Name: "QIM_COMPOSE_FILES", Type: "list", Doc: "more compose files layered over compose.integration.yml, space-separated (the stand-ins of scripts/compose-standins/)"}, "scripts/compose.sh"},
	{config.Var{Name: "QIM_COMPOSE_STANDINS", Type: "bool", Default: "false", Doc: "build and use local stand-in server images (a host with an engine that cannot pull images)"}, "scripts/compose-verify.sh"},
	{config.Var{Name: "QIM_IT_IMAGES", Type: "string", Doc: "server images of the containers tests (gates/stack, gates/svc), redis=IMAGE,redpanda=IMAGE,scylla=IMAGE (any subset; unset: the upstream images)"}, "go test ./gates/stack"},
	{config.Var{Name: "QIM_IT_SKIP", Type: "bool", Default: "false", Doc: "skip integration tests when the stack cannot start (never in CI)"}, "go test (gates/itest)"},
	{config.Var{Name: "QIM_INFRA_CACHE", Type: "string", Default: "$HOME/.cache/qim/infra", Doc: "where the Kafka and Cassandra jars are cached"}, "scripts/fetch-infra.sh, gates/stack"},
	{config.Var{Name: "QIM_KAFKA_VERSION", Type: "string", Default: "4.4.0", Doc: "Apache Kafka version fetched from Maven Central"}, "scripts/fetch-infra.sh"},
	{config.Var{Name: "QIM_CASSANDRA_VERSION", Type: "string", Default: "5.0.9", Doc: "Apache Cassandra version fetched from Maven Central"}, "scripts/fetch-infra.sh"},
	{config.Var{Name: "QIM_LOG4J_VERSION", Type: "string", Default: "2.25.5", Doc: "log4j version fetched for the Kafka broker"}, "scripts/fetch-infra.sh"},
	{config.Var{Name: "QIM_PROTOC", Type: "string", Doc: "protoc binary to use instead of Debian's protobuf-compiler"}, "scripts/gen-proto.sh"},
	{config.Var{Name: "QIM_PROJECT", Type: "string", Doc: "the qim-it-* project of a stack, printed by qim-gate stack up"}, "qim-gate stack up (output)"},
	{config.Var{Name: "QIM_PROJECT_DIR", Type: "string", Doc: "the project directory of a stack, printed by qim-gate stack up"}, "qim-gate stack up (output)"},
	{config.Var{Name: "QIM_CQL_ADDR", Type: "string", Doc: "the stack's CQL address when started with --with-cql, printed by qim-gate stack up"}, "qim-gate stack up (output)"},
	{config.Var{Name: "QIM_LOAD_RATE", Type: "float", Unit: "msg/s", Doc: "rate of the opt-in delivery load measurement (unset: the test is skipped)"}, "go test ./gates/e2e -run DeliveryLoad"},
	{config.Var{Name: "QIM_LOAD_SECONDS", Type: "int", Unit: "seconds", Doc: "duration of the opt-in delivery load measurement"}, "go test ./gates/e2e -run DeliveryLoad"},
	{config.Var{Name: "QIM_LOAD_PAIRS", Type: "int", Unit: "pairs", Doc: "sender/recipient pairs of the opt-in delivery load measurement"}, "go test ./gates/e2e -run DeliveryLoad"},
	{config.Var{Name: "QIM_LOAD_DUMP_METRICS", Type: "bool", Doc: "print every service's /metrics after the opt-in delivery load measurement"}, "go test ./gates/e2e -run DeliveryLoad"},
}

// renamed names retired variables and what replaced them, so the environment check can say so.
var renamed = map[string]string{
	"QIM_HEARTBEAT_MS":               "renamed to QIM_HEARTBEAT_INTERVAL, a Go duration such as 60s",
	"QIM_HEARTBEAT_TIMEOUT_MS":       "renamed to QIM_HEARTBEAT_TIMEOUT, a Go duration such as 150s",
	"QIM_GATEWAY_AUTH_TIMEOUT_MS":    "renamed to QIM_GATEWAY_AUTH_TIMEOUT, a Go duration such as 10s",
	"QIM_GATEWAY_BACKEND_TIMEOUT_MS": "renamed to QIM_GATEWAY_BACKEND_TIMEOUT, a Go duration such as 5s",
	"QIM_GATEWAY_WRITE_TIMEOUT_MS":   "renamed to QIM_GATEWAY_WRITE_TIMEOUT, a Go duration such as 10s",
	"QIM_WRITER_ADDR":                "renamed to QIM_WRITER_ADDRS, a comma-separated list of writer addresses (one is a list of one)",
	"QIM_MAILBOX_ADDR":               "renamed to QIM_MAILBOX_ADDRS, a comma-separated list of MailboxNode addresses (one is a list of one)",
	"QIM_SESSION_ADDR":               "renamed to QIM_SESSION_ADDRS, a comma-separated list of SessionProjection addresses (one is a list of one)",
	"QIM_FANOUT_PRODUCER_IDEMPOTENCE": "renamed: set QIM_FANOUT_DISABLE_PRODUCER_IDEMPOTENCE=true to turn idempotence off; " +
		"unset it to keep it on",
}

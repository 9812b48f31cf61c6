package harnessvars

// Var is one QIM_* variable read by the test harness, its scripts or its tests.
type Var struct {
	Name    string
	Default string // "" when unset means off or derived
	ReadBy  string // what reads it
	Doc     string
}

// Vars are the harness's variables. None is a service's: the harness builds every child's
// environment explicitly (gates/proc), so a service never sees them, and a service that did
// would refuse them as unknown (TestNoHarnessVariableReachesTheProduct).
var Vars = []Var{
	{Name: "QIM_WRITE_REAL_HISTORY", Default: "false", ReadBy: "go test ./loadgen -run TestIntegrationHistory", Doc: "write the history of loadgen's integration run to chaos/check/testdata/real-run.log.zst (refreshing the checker's recorded test data)"},
	{Name: "QIM_IT_ENDPOINTS", ReadBy: "go test (gates/itest)", Doc: "reuse a running stack (its endpoints.json or project directory) instead of starting one per test package"},
	{Name: "QIM_IMAGE", Default: "qim-server:dev", ReadBy: "scripts/image.sh, scripts/compose.sh, compose.integration.yml, go test ./gates/svc", Doc: "the Q-IM service image built by scripts/image.sh and run by compose.integration.yml (and by gates/svc's TestContainerDeployment, which skips without it)"},
	{Name: "QIM_COMPOSE_FILES", ReadBy: "scripts/compose.sh", Doc: "more compose files layered over compose.integration.yml, space-separated (the stand-ins of scripts/compose-standins/)"},
	{Name: "QIM_COMPOSE_STANDINS", Default: "false", ReadBy: "scripts/compose-verify.sh", Doc: "build and use local stand-in server images (a host with an engine that cannot pull images)"},
	{Name: "QIM_IT_IMAGES", ReadBy: "go test ./gates/stack", Doc: "server images of the containers tests (gates/stack, gates/svc), redis=IMAGE,redpanda=IMAGE,scylla=IMAGE (any subset; unset: the upstream images)"},
	{Name: "QIM_IT_SKIP", Default: "false", ReadBy: "go test (gates/itest)", Doc: "skip integration tests when the stack cannot start (never in CI)"},
	{Name: "QIM_INFRA_CACHE", Default: "$HOME/.cache/qim/infra", ReadBy: "scripts/fetch-infra.sh, gates/stack", Doc: "where the Kafka and Cassandra jars are cached"},
	{Name: "QIM_KAFKA_VERSION", Default: "4.4.0", ReadBy: "scripts/fetch-infra.sh", Doc: "Apache Kafka version fetched from Maven Central"},
	{Name: "QIM_CASSANDRA_VERSION", Default: "5.0.9", ReadBy: "scripts/fetch-infra.sh", Doc: "Apache Cassandra version fetched from Maven Central"},
	{Name: "QIM_LOG4J_VERSION", Default: "2.25.5", ReadBy: "scripts/fetch-infra.sh", Doc: "log4j version fetched for the Kafka broker"},
	{Name: "QIM_PROTOC", ReadBy: "scripts/gen-proto.sh", Doc: "protoc binary to use instead of Debian's protobuf-compiler"},
	{Name: "QIM_LOAD_RATE", ReadBy: "go test ./gates/e2e -run DeliveryLoad", Doc: "rate of the opt-in delivery load measurement (unset: the test is skipped)"},
	{Name: "QIM_LOAD_SECONDS", ReadBy: "go test ./gates/e2e -run DeliveryLoad", Doc: "duration of the opt-in delivery load measurement"},
	{Name: "QIM_LOAD_PAIRS", ReadBy: "go test ./gates/e2e -run DeliveryLoad", Doc: "sender/recipient pairs of the opt-in delivery load measurement"},
	{Name: "QIM_LOAD_DUMP_METRICS", ReadBy: "go test ./gates/e2e -run DeliveryLoad", Doc: "print every service's /metrics after the opt-in delivery load measurement"},
}

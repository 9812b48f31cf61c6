#!/usr/bin/env bash
# Runs compose.integration.yml's two-instance deployment on this host's container engine and
# proves it carries messages: every service healthy (mTLS between containers, topics, shard
# ownership, presence), then qim-loadgen over both gateways (pairs straddle them, so pushes
# cross gateways through qim.presence) with nothing lost, and every instance's work counter
# moved. Then the same topology through the testcontainers provider
# (TestContainerDeployment). On a host that cannot pull images, QIM_COMPOSE_STANDINS=1
# builds local stand-ins for the servers first (scripts/compose-standins/). Leaves nothing running.
#   scripts/compose-verify.sh [SECONDS]     (default 20 s of load at 50 msg/s)
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
if [ "${QIM_COMPOSE_STANDINS:-0}" = 1 ]; then
  bash scripts/compose-standins/build.sh
  export QIM_COMPOSE_FILES="scripts/compose-standins/compose.standins.yml ${QIM_COMPOSE_FILES:-}"
  export QIM_IT_IMAGES=redis=qim-standin/redis:local,redpanda=qim-standin/kafka:local
  export TESTCONTAINERS_RYUK_DISABLED=true # its reaper image cannot be pulled either
fi
if [ -f /.dockerenv ] && pgrep -x dockerd >/dev/null; then
  # testcontainers takes a host with /.dockerenv for a container and dials the bridge gateway;
  # this engine runs beside us, so its published ports are on loopback.
  export TESTCONTAINERS_HOST_OVERRIDE="${TESTCONTAINERS_HOST_OVERRIDE:-127.0.0.1}"
fi
export QIM_IMAGE="${QIM_IMAGE:-qim-server:dev}"
trap 'scripts/compose.sh down >/dev/null 2>&1 || true' EXIT
scripts/compose.sh down >/dev/null 2>&1 || true
t0=$(date +%s)
scripts/compose.sh up
echo "verify: every service healthy after $(( $(date +%s) - t0 )) s"
scripts/compose.sh ps --format '{{.Service}} {{.Status}}'

go build -o bin/ ./cmd/qim-loadgen
set -a; . .qim-compose/token.env; set +a
# An unjudged 10 s first: right after "up" the broker's JVM compiles its hot paths under the
# first load, and the judged window's ACK p99 then measured that (seen: 188 ms and 166 ms in 2 of
# 9 runs here, 44 to 99 ms in the others, on this commit and on the one before it alike).
echo "verify: 10 s warm-up at 50 msg/s (not judged)"
bin/qim-loadgen --gateway 127.0.0.1:7100 --more-gateways 127.0.0.1:7110 --rate 50 --duration 10s \
  --connections 40 --sdk-clients 0 >/dev/null 2>&1 || true
echo "verify: ${secs} s at 50 msg/s over both gateways"
bin/qim-loadgen --gateway 127.0.0.1:7100 --more-gateways 127.0.0.1:7110 --rate 50 --duration "${secs}s" \
  --connections 40 --sdk-clients 0

# port SERVICE: the host address of SERVICE's /metrics, asked of compose rather than written
# here, so that a service added to the deployment cannot move the checks onto another one.
port() { scripts/compose.sh port "$1" 9100 | tail -n1; }
# metric NAME SERVICE: the sum of a counter family on SERVICE's /metrics.
metric() {
  curl -fsS "http://$(port "$2")/metrics" | awk -v m="$1" '$1 ~ "^"m"({|$)" {s += $2} END {print s+0}'
}
fail=0
check() { # NAME SERVICE
  local v; v=$(metric "$1" "$2")
  if awk -v v="$v" 'BEGIN {exit !(v > 0)}'; then echo "verify: $2: $1 = $v"; else echo "verify: FAIL $2: $1 = $v" >&2; fail=1; fi
}
for i in 1 2; do
  check qim_writer_commits_total "writer-$i"
  check qim_mailbox_pulls_total "mailbox-$i"
  check qim_session_records_applied_total "session-$i"
  check qim_gateway_push_targets_total "gateway-$i"
  v=$(metric qim_mailbox_unowned_requests_total "mailbox-$i")
  [ "$v" = 0 ] || { echo "verify: FAIL mailbox-$i: qim_mailbox_unowned_requests_total = $v" >&2; fail=1; }
done
[ "$fail" = 0 ] || exit 1
scripts/compose.sh down >/dev/null 2>&1

echo "verify: the same topology through the testcontainers provider"
log=$(mktemp)
rc=0
go test ./gates/svc -run '^TestContainerDeployment$' -count=1 -v >"$log" 2>&1 || rc=$?
grep -E '^(=== RUN|--- |PASS|FAIL|ok)|stack qim-it|containers_test|SKIP' "$log" || true
grep -q -- '--- PASS: TestContainerDeployment' "$log" || rc=1 # a skip proves nothing
rm -f "$log"
[ "$rc" = 0 ] || { echo "verify: FAIL TestContainerDeployment (failed or skipped)" >&2; exit 1; }
echo "verify: PASS"

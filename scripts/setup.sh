#!/usr/bin/env bash
# setup.sh — install what the integration tests need on a Debian machine (idempotent, run as root):
#   redis-server (Debian package, 7.0.x; the tests start their own instances on free loopback ports —
#   the system service is never started or left running), JDK 17 + Maven (for the Kafka/Cassandra
#   jars), then scripts/fetch-infra.sh (jar cache, see that script for QIM_INFRA_CACHE).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { printf 'setup: %s\n' "$*" >&2; }

SUDO=""
[[ $(id -u) -eq 0 ]] || SUDO="sudo"
updated=0
apt_install() {
  if [[ $updated -eq 0 ]]; then
    log "apt-get update"
    $SUDO apt-get update -qq
    updated=1
  fi
  log "apt-get install -y $*"
  # policy-rc.d exit 101 keeps the package's postinst from starting services during the install.
  local policy=/usr/sbin/policy-rc.d created=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee $policy >/dev/null
    $SUDO chmod +x $policy
    created=1
  fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2 || { [[ $created -eq 0 ]] || $SUDO rm -f $policy; exit 1; }
  [[ $created -eq 0 ]] || $SUDO rm -f $policy
}

if ! command -v redis-server >/dev/null; then
  apt_install redis-server
fi
# The packaged service must not run (or come back at boot) because of us: the tests start their
# own instances on free loopback ports and 6379 stays free.
if command -v systemctl >/dev/null && [[ -e /lib/systemd/system/redis-server.service ]]; then
  $SUDO systemctl disable --now redis-server >/dev/null 2>&1 || $SUDO systemctl disable redis-server >/dev/null 2>&1 || true
fi
if [[ -x /etc/init.d/redis-server && -f /run/redis/redis-server.pid ]]; then
  $SUDO /etc/init.d/redis-server stop >/dev/null 2>&1 || true
fi
if command -v ss >/dev/null && ss -Hltn 'sport = :6379' | grep -q .; then
  log "warning: something listens on port 6379 (not started by this script): $(ss -Hltnp 'sport = :6379' | head -1)"
fi
log "redis: $(redis-server --version)"

JDK17=/usr/lib/jvm/java-17-openjdk-amd64
need=()
[[ -x $JDK17/bin/java ]] || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || need+=(maven)
# The SDK's C ABI (sdk/capi) is built with cgo and its C program with gcc (gates/capiit).
command -v gcc >/dev/null || need+=(gcc libc6-dev)
# The TypeScript SDK (clients/web) builds and tests with node ≥ 20 and npm, and its protobuf code
# is checked against proto/ with protoc (gates/webit).
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
command -v protoc >/dev/null || need+=(protobuf-compiler)
# The browser chat app is tested in Debian's headless Chromium (playwright-core drives it).
[[ -x /usr/bin/chromium ]] || need+=(chromium)
if [[ ${#need[@]} -gt 0 ]]; then
  apt_install "${need[@]}"
fi
log "java 17: $($JDK17/bin/java -version 2>&1 | head -1)"
log "maven: $(mvn -B -v 2>/dev/null | head -1)"
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
[[ $node_major -ge 20 ]] || { log "node $(node --version 2>/dev/null) is too old: clients/web needs node >= 20"; exit 1; }
log "node: $(node --version), npm $(npm --version)"

export JAVA_HOME="${JAVA_HOME:-$JDK17}"
"$here/fetch-infra.sh"
log "done"

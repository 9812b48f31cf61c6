#!/usr/bin/env bash
# A container engine for the container checks on a machine that has none running: installs
# Debian's docker.io and its compose v2 plugin where missing, and starts or stops a dockerd of
# its own. An engine that already answers is used as it is and never stopped.
#   scripts/engine.sh start     (prints "engine: started" or "engine: already running")
#   scripts/engine.sh stop      (stops only a dockerd this script started)
set -euo pipefail
pidfile=/run/qim-dockerd.pid
compose_version=v5.6.0 # docker/compose, built from the Go module proxy (no download site here)

install_compose() {
  docker compose version >/dev/null 2>&1 && return
  echo "engine: building the docker compose plugin $compose_version from the Go module proxy"
  local dir src
  dir=$(go mod download -json "github.com/docker/compose/v5@$compose_version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  src=$(mktemp -d)
  cp -r "$dir/." "$src" && chmod -R u+w "$src"
  mkdir -p "$HOME/.docker/cli-plugins"
  # go install pkg@version refuses a module whose go.mod has exclude directives: build in a copy.
  (cd "$src" && GOFLAGS=-mod=mod go build -o "$HOME/.docker/cli-plugins/docker-compose" ./cmd)
  rm -rf "$src"
}

case "${1:-}" in
  start)
    if ! command -v dockerd >/dev/null; then
      echo "engine: installing docker.io (Debian)"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
    fi
    install_compose
    if docker info >/dev/null 2>&1; then echo "engine: already running"; exit 0; fi
    nohup dockerd --host unix:///var/run/docker.sock >/tmp/qim-dockerd.log 2>&1 &
    echo $! > "$pidfile"
    for _ in $(seq 60); do docker info >/dev/null 2>&1 && { echo "engine: started (log /tmp/qim-dockerd.log)"; exit 0; }; sleep 1; done
    echo "engine: dockerd did not answer in 60 s; last log lines:" >&2; tail -20 /tmp/qim-dockerd.log >&2; exit 1
    ;;
  stop)
    [ -f "$pidfile" ] || exit 0
    kill "$(cat "$pidfile")" 2>/dev/null || true
    for _ in $(seq 30); do kill -0 "$(cat "$pidfile")" 2>/dev/null || break; sleep 1; done
    rm -f "$pidfile"; echo "engine: stopped"
    ;;
  *) sed -n '2,7p' "$0" >&2; exit 2 ;;
esac

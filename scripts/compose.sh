#!/usr/bin/env bash
# Runs compose.integration.yml: the servers and the two-instance Q-IM deployment on a container
# engine (docker compose v2, or podman with its compose provider as `docker compose`).
#   scripts/compose.sh up [COMPOSE FLAGS...]   image, certificates, then up -d --wait
#   scripts/compose.sh down                    stop and drop the data and .qim-compose/
#   scripts/compose.sh COMMAND ...             any other docker compose command (ps, logs, …)
# QIM_IMAGE names the service image (default qim-server:dev; scripts/image.sh builds it).
# QIM_COMPOSE_FILES adds compose files after compose.integration.yml (space-separated), for
# example the stand-ins of scripts/compose-standins/ on a host that cannot pull images.
set -euo pipefail
cd "$(dirname "$0")/.."
files=(-f compose.integration.yml)
for f in ${QIM_COMPOSE_FILES:-}; do files+=(-f "$f"); done
state=.qim-compose

# qimctl is a product binary: like the services it refuses QIM_* variables it does not read, and
# this script runs with the harness's (QIM_IMAGE, QIM_COMPOSE_FILES, QIM_COMPOSE_STANDINS). It
# gets an environment without any QIM_* variable.
qimctl() { env $(compgen -e | grep '^QIM_' | sed 's/^/-u /') go run ./cmd/qimctl "$@"; }

prepare() {
  scripts/image.sh "${QIM_IMAGE:-qim-server:dev}"
  if [ ! -f "$state/certs/ca.pem" ]; then
    echo "compose: writing the development certificate set into $state/certs"
    mkdir -p "$state"
    qimctl certs dev --out "$state/certs" --instances 2 --env-dir /certs >/dev/null
  fi
  if [ ! -f "$state/token.env" ]; then
    # The gateways' token-signing secret: fresh per stack, never in a committed file.
    printf 'QIM_TOKEN_SECRET=%s\n' "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" > "$state/token.env"
    chmod 600 "$state/token.env"
  fi
}

case "${1:-}" in
  up)
    shift
    prepare
    docker compose "${files[@]}" "$@" up -d --wait
    echo "compose: up; gateways 127.0.0.1:7100 and 127.0.0.1:7110 (token secret in $state/token.env)"
    ;;
  down)
    shift
    docker compose "${files[@]}" --profile cql down -v "$@"
    rm -rf "$state"
    ;;
  "")
    sed -n '2,9p' "$0" >&2
    exit 2
    ;;
  *)
    docker compose "${files[@]}" "$@"
    ;;
esac

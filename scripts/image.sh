#!/usr/bin/env bash
# Builds the Q-IM service image (default tag qim-server:dev) from this checkout: static qim and qimctl
# compiled here, copied into an image FROM scratch (scripts/image/Dockerfile). Needs Go and a
# Docker-compatible engine (docker or podman as `docker`).
#   scripts/image.sh [TAG]
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-${QIM_IMAGE:-qim-server:dev}}"
command -v docker >/dev/null || { echo "image: docker not found: install a container engine (Debian: apt-get install docker.io)" >&2; exit 1; }
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
echo "image: building qim and qimctl (static)"
rev="$(git rev-parse HEAD 2>/dev/null || true)"
CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -buildvcs=false" go build -trimpath \
	-ldflags "-X github.com/qim-dev/qim/services/buildinfo.revision=$rev" -o "$ctx/" ./cmd/qim ./cmd/qimctl
cp scripts/image/Dockerfile "$ctx/Dockerfile"
docker build -q -t "$tag" "$ctx"
echo "image: $tag"

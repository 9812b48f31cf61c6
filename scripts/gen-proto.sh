#!/usr/bin/env bash
# Regenerates the committed Go code (*.pb.go) of every .proto file under proto/.
#
#   scripts/gen-proto.sh           install missing tools, regenerate in place
#   scripts/gen-proto.sh --check   regenerate into a temp dir and fail if the committed
#                                  *.pb.go files differ (CI drift check); writes nothing under proto/
#
# Tools come from package registries only, so this works on a fresh Debian machine:
#   protoc          Debian's protobuf-compiler (installed with apt-get only if protoc is absent)
#   protoc-gen-go   go install google.golang.org/protobuf/cmd/protoc-gen-go at the version of
#                   google.golang.org/protobuf in go.mod, into the project-local bin/ (gitignored)
#   protoc-gen-go-grpc  go install google.golang.org/grpc/cmd/protoc-gen-go-grpc at GRPC_GEN_VERSION,
#                   for the internal gRPC services (files with a `service` block)
#
# Generated files record the protoc version in their header, so regeneration must use the same
# protoc release as the committed files (PROTOC_VERSION below); a different one is refused
# rather than producing a spurious diff. Override with QIM_PROTOC=/path/to/protoc if needed.
set -euo pipefail

PROTOC_VERSION="3.21.12" # Debian bookworm/trixie protobuf-compiler
GRPC_GEN_VERSION="v1.6.2" # generated *_grpc.pb.go record it; pinned like protoc

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
proto_dir="$repo/proto"
bin_dir="$repo/bin"

log() { printf 'gen-proto: %s\n' "$*" >&2; }
die() { printf 'gen-proto: error: %s\n' "$*" >&2; exit 1; }

mode="generate"
case "${1:-}" in
  "") ;;
  --check) mode="check" ;;
  -h | --help) sed -n '2,15p' "${BASH_SOURCE[0]}"; exit 0 ;;
  *) die "unknown argument: $1 (usage: $0 [--check])" ;;
esac

command -v go >/dev/null 2>&1 || die "go is not on PATH"

# --- protoc ---------------------------------------------------------------------------------
protoc="${QIM_PROTOC:-}"
if [[ -z "$protoc" ]]; then
  if ! command -v protoc >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 || die "protoc not found and apt-get unavailable; install protoc $PROTOC_VERSION"
    sudo=""
    if [[ "$(id -u)" -ne 0 ]]; then
      command -v sudo >/dev/null 2>&1 || die "protoc not found; run as root or install protobuf-compiler"
      sudo="sudo"
    fi
    log "protoc not found: apt-get update && apt-get install -y protobuf-compiler"
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends protobuf-compiler
  fi
  protoc="$(command -v protoc)"
fi
protoc_version="$("$protoc" --version 2>/dev/null | awk '{print $2}')" || die "$protoc --version failed"
if [[ "$protoc_version" != "$PROTOC_VERSION" ]]; then
  die "$protoc is libprotoc $protoc_version, expected $PROTOC_VERSION (Debian protobuf-compiler); set QIM_PROTOC to a matching protoc"
fi
log "using $protoc (libprotoc $protoc_version)"

# --- protoc-gen-go --------------------------------------------------------------------------
gen_go_version="$(cd "$repo" && go list -m -f '{{.Version}}' google.golang.org/protobuf)"
[[ -n "$gen_go_version" ]] || die "google.golang.org/protobuf is not in go.mod"
gen_go="$bin_dir/protoc-gen-go"
have=""
if [[ -x "$gen_go" ]]; then
  have="$("$gen_go" --version 2>/dev/null | awk '{print $2}')"
fi
if [[ "$have" != "$gen_go_version" ]]; then
  log "installing protoc-gen-go $gen_go_version into $bin_dir${have:+ (found $have)}"
  mkdir -p "$bin_dir"
  (cd "$repo" && GOBIN="$bin_dir" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$gen_go_version")
fi
log "using $gen_go ($("$gen_go" --version))"

gen_grpc="$bin_dir/protoc-gen-go-grpc"
have_grpc=""
if [[ -x "$gen_grpc" ]]; then
  have_grpc="v$("$gen_grpc" --version 2>/dev/null | awk '{print $2}')"
fi
if [[ "$have_grpc" != "$GRPC_GEN_VERSION" ]]; then
  log "installing protoc-gen-go-grpc $GRPC_GEN_VERSION into $bin_dir${have_grpc:+ (found $have_grpc)}"
  mkdir -p "$bin_dir"
  (cd "$repo" && GOBIN="$bin_dir" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$GRPC_GEN_VERSION")
fi
log "using $gen_grpc ($("$gen_grpc" --version))"

# --- generate -------------------------------------------------------------------------------
mapfile -t protos < <(cd "$proto_dir" && find . -name '*.proto' -type f | sed 's|^\./||' | LC_ALL=C sort)
((${#protos[@]} > 0)) || die "no .proto files under $proto_dir"

# generate OUT_DIR: writes the .pb.go of every .proto under OUT_DIR, mirroring proto/.
generate() {
  local out="$1"
  # One protoc run per proto package (directory), as protoc-gen-go expects.
  local dir
  while IFS= read -r dir; do
    local files=()
    local f
    for f in "${protos[@]}"; do
      [[ "$(dirname "$f")" == "$dir" ]] && files+=("$f")
    done
    log "protoc --go_out=paths=source_relative ${files[*]}"
    (cd "$proto_dir" && "$protoc" \
      --proto_path=. \
      --plugin=protoc-gen-go="$gen_go" \
      --go_out="$out" --go_opt=paths=source_relative \
      --plugin=protoc-gen-go-grpc="$gen_grpc" \
      --go-grpc_out="$out" --go-grpc_opt=paths=source_relative \
      "${files[@]}")
  done < <(printf '%s\n' "${protos[@]}" | xargs -n1 dirname | LC_ALL=C sort -u)
}

# list_generated DIR: the generated outputs (*.pb.go and *_grpc.pb.go) under DIR, relative, sorted.
list_generated() {
  (cd "$1" && find . -name '*.pb.go' -type f | sed 's|^\./||' | LC_ALL=C sort)
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
generate "$tmp"

if [[ "$mode" == "check" ]]; then
  if ! diff -u <(list_generated "$proto_dir") <(list_generated "$tmp") >&2; then
    die "the set of committed *.pb.go files differs from the .proto files; run scripts/gen-proto.sh"
  fi
  drift=0
  while IFS= read -r f; do
    if ! cmp -s "$proto_dir/$f" "$tmp/$f"; then
      log "DRIFT: proto/$f"
      diff -u "$proto_dir/$f" "$tmp/$f" | head -n 40 >&2 || true
      drift=1
    fi
  done < <(list_generated "$tmp")
  ((drift == 0)) || die "committed generated code is stale; run scripts/gen-proto.sh"
  log "OK: $(list_generated "$tmp" | wc -l) generated files match their .proto sources"
  exit 0
fi

# Replace in place: remove generated files whose .proto is gone, copy the fresh ones.
while IFS= read -r f; do
  if [[ ! -f "$tmp/$f" ]]; then
    log "removing stale proto/$f"
    rm -f "$proto_dir/$f"
  fi
done < <(list_generated "$proto_dir")
while IFS= read -r f; do
  if cmp -s "$proto_dir/$f" "$tmp/$f" 2>/dev/null; then
    log "unchanged proto/$f"
  else
    log "writing proto/$f"
    mkdir -p "$(dirname "$proto_dir/$f")"
    cp "$tmp/$f" "$proto_dir/$f"
  fi
done < <(list_generated "$tmp")
log "done"

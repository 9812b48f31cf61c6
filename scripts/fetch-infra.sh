#!/usr/bin/env bash
# fetch-infra.sh — download the server jars the process stack provider runs (gates/stack).
#
# Cache layout (default ${QIM_INFRA_CACHE:-$HOME/.cache/qim/infra}; it lives OUTSIDE the clone so
# fresh CI clones on the same machine reuse it — pass the same dir to stack.WithInfraCache or set
# QIM_INFRA_CACHE for both this script and the tests):
#   <cache>/kafka/libs/*.jar       org.apache.kafka:kafka_2.13:$KAFKA_VERSION and its runtime deps, plus
#                                  log4j-slf4j-impl (the broker's slf4j 1.7 -> log4j2 binding: the
#                                  kafka_2.13 pom names slf4j-api and log4j-core but no binding, so
#                                  without it the broker logs NOTHING; the Kafka tarball ships it)
#   <cache>/kafka/FETCHED          "kafka_2.13=<version>", written only after a complete download
#   <cache>/cassandra/libs/*.jar   org.apache.cassandra:cassandra-all:$CASSANDRA_VERSION + runtime deps
#   <cache>/cassandra/FETCHED      "cassandra-all=<version>"
# A component whose FETCHED marker names the pinned version is skipped; a partial download (no
# marker, or another version) is thrown away and fetched again. Idempotent; needs mvn + JDK 17.
#
# Maven may print "[ERROR] ... systemPath ... jmc" while reading cassandra-all's parent pom
# (optional profiler dependencies with system scope). It is harmless: resolution still succeeds.
set -euo pipefail

# Pinned: newest versions Maven Central served on 2026-11-29 (checked with mvn dependency:get).
KAFKA_VERSION="${QIM_KAFKA_VERSION:-4.4.0}"
CASSANDRA_VERSION="${QIM_CASSANDRA_VERSION:-5.0.9}"
# Same version as the log4j-core that kafka_2.13:$KAFKA_VERSION resolves to (2.25.5 for 4.4.0).
LOG4J_VERSION="${QIM_LOG4J_VERSION:-2.25.5}"
CACHE="${QIM_INFRA_CACHE:-${HOME:-/tmp}/.cache/qim/infra}"  # same default as stack.DefaultInfraCache

log() { printf 'fetch-infra: %s\n' "$*" >&2; }

command -v mvn >/dev/null || { log "mvn not found: run scripts/setup.sh (apt-get install -y maven)"; exit 1; }

# fetch NAME GROUP ARTIFACT VERSION [EXTRA_GROUP:EXTRA_ARTIFACT:EXTRA_VERSION ...]
fetch() {
  local name=$1 group=$2 artifact=$3 version=$4
  shift 4
  local extra="" g a v
  for gav in "$@"; do
    IFS=: read -r g a v <<<"$gav"
    extra+="    <dependency><groupId>$g</groupId><artifactId>$a</artifactId><version>$v</version></dependency>
"
  done
  local dir="$CACHE/$name" marker="$CACHE/$name/FETCHED" want="$artifact=$version${*:+ $*}"
  if [[ -f "$marker" && "$(cat "$marker")" == "$want" && -d "$dir/libs" ]]; then
    log "$name: $want already in $dir/libs ($(ls "$dir/libs" | wc -l) jars)"
    return 0
  fi
  log "$name: fetching $group:$artifact:$version into $dir/libs ..."
  mkdir -p "$dir"
  rm -f "$marker"
  local work partial="$dir/libs.partial"
  work="$(mktemp -d)"
  rm -rf "$partial"
  cat >"$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.qim.infra</groupId><artifactId>fetch-$name</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>$group</groupId><artifactId>$artifact</artifactId><version>$version</version></dependency>
$extra  </dependencies>
</project>
POM
  local started=$SECONDS
  # -q keeps only warnings/errors; strip colour codes and blank lines from mvn's output.
  local rc=0
  (cd "$work" && mvn -q -B -Dstyle.color=never dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$partial" >"$work/mvn.log" 2>&1) || rc=$?
  sed -e 's/\x1b\[[0-9;]*m//g' -e '/^[[:space:]]*$/d' "$work/mvn.log" >&2
  if [[ $rc -ne 0 || ! -f "$partial/$artifact-$version.jar" ]]; then
    rm -rf "$work" "$partial"
    log "$name: download FAILED (mvn exit $rc); nothing cached, rerun scripts/fetch-infra.sh"
    exit 1
  fi
  rm -rf "$work" "$dir/libs"
  mv "$partial" "$dir/libs"
  printf '%s' "$want" >"$marker"
  log "$name: $want done in $((SECONDS - started))s ($(ls "$dir/libs" | wc -l) jars, $(du -sh "$dir/libs" | cut -f1))"
}

fetch kafka org.apache.kafka kafka_2.13 "$KAFKA_VERSION" \
  "org.apache.logging.log4j:log4j-slf4j-impl:$LOG4J_VERSION"
fetch cassandra org.apache.cassandra cassandra-all "$CASSANDRA_VERSION"
printf 'kafka_2.13=%s\ncassandra-all=%s\n' "$KAFKA_VERSION" "$CASSANDRA_VERSION" >"$CACHE/versions.txt"
log "infra cache ready: $CACHE"

#!/usr/bin/env bash
# Stand-in server images for compose.integration.yml, built FROM scratch out of files already on
# this host. This machine has a container engine but cannot pull images, so these let it verify
# the compose file's Q-IM services; the upstream images (redis:7.2, Redpanda, ScyllaDB) are what
# users run. Used with compose.standins.yml next to this script:
#
#   scripts/compose-standins/build.sh
#   docker compose -f compose.integration.yml -f scripts/compose-standins/compose.standins.yml up -d --wait
#
# Builds qim-standin/redis:local (the host's redis-server/redis-cli and their shared libraries,
# busybox sh for an entrypoint that turns protected mode off like the official image)
# and qim-standin/kafka:local (Apache Kafka 4.x, KRaft, single node, on the host's JDK 17 with
# the jars scripts/fetch-infra.sh put in the infra cache; busybox for /bin/sh and nc).
# Idempotent: re-running rebuilds from the same files, which the engine's cache makes cheap.
set -euo pipefail

JDK=${JDK:-/usr/lib/jvm/java-17-openjdk-amd64}
KAFKA_LIBS=${KAFKA_LIBS:-${QIM_INFRA_CACHE:-$HOME/.cache/qim/infra}/kafka/libs}
BUSYBOX=${BUSYBOX:-/bin/busybox}
LOADER=/lib64/ld-linux-x86-64.so.2
DOCKER=${DOCKER:-docker}

log() { printf '==> %s\n' "$*"; }
die() { printf 'build.sh: %s\n' "$*" >&2; exit 1; }

if [[ ! -e $BUSYBOX && $BUSYBOX == /bin/busybox && $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  log "installing busybox-static (Debian)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >/dev/null; }
fi
for f in /usr/bin/redis-server /usr/bin/redis-cli "$JDK/bin/java" "$BUSYBOX" "$LOADER"; do
  [[ -e $f ]] || die "$f missing (apt-get install -y redis-server openjdk-17-jdk-headless busybox-static)"
done
compgen -G "$KAFKA_LIBS/kafka_2.13-*.jar" >/dev/null || die "no Kafka jars in $KAFKA_LIBS: run scripts/fetch-infra.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# put SRC DST: copy one file, symlinks dereferenced.
put() { mkdir -p "$(dirname "$2")"; cp -L --preserve=mode "$1" "$2"; }

# add_libs ROOT SKIP_PREFIX FILE...: copy the shared libraries ldd reports for FILE... (outside
# SKIP_PREFIX, which is copied whole anyway) and the dynamic loader to the same paths in ROOT.
add_libs() {
  local root=$1 skip=$2 lib; shift 2
  { ldd "$@" 2>/dev/null || true; } | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && $2 ~ /^\(/ {print $1}' |
    sort -u | while read -r lib; do
      [[ -n $skip && $lib == "$skip"/* ]] && continue
      [[ -e $root$lib ]] || put "$lib" "$root$lib"
    done
  [[ -e $root$LOADER ]] || put "$LOADER" "$root$LOADER"
}

# copy_tree SRC DST: copy a directory with symlinks dereferenced, dropping dangling ones
# (the JDK links src.zip and GUI libraries that a headless install does not have).
copy_tree() {
  local src=$1 dst=$2 l
  mkdir -p "$dst"
  cp -a "$src/." "$dst/"
  find "$dst" -type l | while read -r l; do
    if [[ -e $l ]]; then cp -L --preserve=mode --remove-destination "$l" "$l.deref" && mv "$l.deref" "$l"; else rm -f "$l"; fi
  done
}

# ---------------------------------------------------------------- redis
log "redis: assembling rootfs"
r=$work/redis/rootfs
put /usr/bin/redis-server "$r/usr/bin/redis-server"   # a link to redis-check-rdb; argv[0] picks the mode
put /usr/bin/redis-cli "$r/usr/bin/redis-cli"
add_libs "$r" "" /usr/bin/redis-server /usr/bin/redis-cli
mkdir -p "$r/data" "$r/tmp" && chmod 1777 "$r/tmp"
# The official redis image builds redis with protected mode off (clients come over the container
# network, not loopback); Debian's redis has it on, so an entrypoint (busybox sh) appends
# --protected-mode no to the compose file's unchanged `redis-server ...` command.
put "$BUSYBOX" "$r/bin/busybox" && ln -sf busybox "$r/bin/sh"
mkdir -p "$r/usr/local/bin"
cat > "$r/usr/local/bin/docker-entrypoint.sh" <<'ENTRY'
#!/bin/sh
if [ "${1:-}" = redis-server ]; then shift; exec /usr/bin/redis-server "$@" --protected-mode no; fi
exec "$@"
ENTRY
chmod 755 "$r/usr/local/bin/docker-entrypoint.sh"
cat > "$work/redis/Dockerfile" <<'DOCKERFILE'
# Stand-in for redis:7.2 (see scripts/compose-standins/build.sh).
FROM scratch
COPY rootfs/ /
ENV PATH=/usr/bin:/bin
WORKDIR /data
VOLUME /data
EXPOSE 6379
HEALTHCHECK --interval=2s --retries=15 CMD ["/usr/bin/redis-cli", "ping"]
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["redis-server", "--appendonly", "yes", "--appendfsync", "always", "--no-appendfsync-on-rewrite", "no", "--maxmemory-policy", "noeviction", "--save", ""]
DOCKERFILE
log "redis: docker build -t qim-standin/redis:local"
"$DOCKER" build -q -t qim-standin/redis:local "$work/redis"

# ---------------------------------------------------------------- kafka
log "kafka: assembling rootfs (JDK $JDK, jars $KAFKA_LIBS)"
k=$work/kafka/rootfs
for d in bin lib conf; do copy_tree "$JDK/$d" "$k$JDK/$d"; done
put "$JDK/release" "$k$JDK/release"
[[ -d /etc/java-17-openjdk ]] && copy_tree /etc/java-17-openjdk "$k/etc/java-17-openjdk"
add_libs "$k" "$JDK" "$JDK/bin/java" "$JDK/lib/server/libjvm.so" "$JDK"/lib/*.so
mkdir -p "$k/opt/kafka/libs" "$k/opt/kafka/config" "$k/bin" "$k/var/lib/redpanda/data" "$k/tmp" "$k/root"
chmod 1777 "$k/tmp"
cp -L "$KAFKA_LIBS"/*.jar "$k/opt/kafka/libs/"
put "$BUSYBOX" "$k/bin/busybox"
for a in sh nc cat cut head base64 tr mkdir ls ps sed sleep cp; do ln -sf busybox "$k/bin/$a"; done
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$k/etc/passwd"

# Mirrors gates/stack/kafka.go (kafkaProps), with the compose file's two Redpanda listeners.
cat > "$k/opt/kafka/config/server.properties" <<'PROPS'
# Single combined KRaft node (broker+controller); see scripts/compose-standins/build.sh.
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:9093
listeners=internal://0.0.0.0:9092,external://0.0.0.0:19092,CONTROLLER://127.0.0.1:9093
advertised.listeners=internal://redpanda:9092,external://127.0.0.1:19092,CONTROLLER://127.0.0.1:9093
listener.security.protocol.map=internal:PLAINTEXT,external:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=internal
log.dirs=/var/lib/redpanda/data/kafka
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=1
group.initial.rebalance.delay.ms=0
num.partitions=1
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
background.threads=2
log.segment.bytes=16777216
log.index.size.max.bytes=1048576
log.cleaner.dedupe.buffer.size=16777216
PROPS

cat > "$k/opt/kafka/config/log4j2.properties" <<'L4J'
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.target = SYSTEM_OUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = STDOUT
logger.state.name = state.change.logger
logger.state.level = WARN
L4J

# Formats the storage on first start only (like the harness's prepare step), then runs the broker.
cat > "$k/opt/kafka/start.sh" <<START
#!/bin/sh
set -eu
JAVA=$JDK/bin/java
START
cat >> "$k/opt/kafka/start.sh" <<'START'
# Invoked as Redpanda is (`redpanda start --kafka-addr A --advertise-kafka-addr B ...`, also
# --flag=value), so compose.integration.yml's command and the containers provider's work
# unchanged: A and B (name://host:port,...) become Kafka's listeners; other flags are ignored.
# Without them the two listeners of server.properties stay.
CONF=/opt/kafka/config/server.properties
RUN=/tmp/server.properties
DATA=/var/lib/redpanda/data/kafka
L4J=-Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties
addr= adv=
[ "${1:-}" = start ] && shift
while [ $# -gt 0 ]; do
  case "$1" in
    --kafka-addr=*) addr=${1#*=} ;;
    --advertise-kafka-addr=*) adv=${1#*=} ;;
    --kafka-addr) addr=$2; shift ;;
    --advertise-kafka-addr) adv=$2; shift ;;
  esac
  shift
done
cp "$CONF" "$RUN"
if [ -n "$addr" ]; then
  names=$(echo "$addr" | tr ',' '\n' | sed 's#://.*##' | tr 'a-z' 'A-Z')
  map=CONTROLLER:PLAINTEXT
  for n in $names; do map="$map,$n:PLAINTEXT"; done
  up() { echo "$1" | tr ',' '\n' | while IFS= read -r l; do
    printf '%s://%s,' "$(echo "${l%%://*}" | tr 'a-z' 'A-Z')" "${l#*://}"; done; }
  { echo "listeners=$(up "$addr")CONTROLLER://127.0.0.1:9093"
    echo "advertised.listeners=$(up "${adv:-$addr}")CONTROLLER://127.0.0.1:9093"
    echo "listener.security.protocol.map=$map"
    echo "inter.broker.listener.name=$(echo "$names" | head -n 1)"; } >> "$RUN"  # later keys win
fi
if [ ! -f "$DATA/meta.properties" ]; then
  mkdir -p "$DATA"
  id=-   # a cluster id: 16 random bytes as unpadded URL-safe base64, not starting with '-'
  while [ "${id#-}" != "$id" ]; do id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22); done
  echo "start.sh: formatting $DATA (cluster id $id)"
  "$JAVA" -Xmx128m -XX:TieredStopAtLevel=1 -XX:-UsePerfData "$L4J" -cp '/opt/kafka/libs/*' \
    kafka.tools.StorageTool format --standalone -t "$id" -c "$RUN"
fi
# Redpanda's readiness line, which the containers provider waits for.
( while ! nc -w 2 127.0.0.1 "$(sed -n 's#^listeners=[^:]*://[^:]*:\([0-9]*\).*#\1#p' "$RUN" | tail -n 1)" </dev/null 2>/dev/null; do sleep 1; done
  echo "Successfully started Redpanda! (stand-in: Apache Kafka)" ) &
exec "$JAVA" -Xms256m -Xmx"${KAFKA_HEAP:-512m}" -XX:TieredStopAtLevel=1 -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
  -XX:+ExitOnOutOfMemoryError -XX:-UsePerfData -Djava.awt.headless=true "$L4J" \
  -cp '/opt/kafka/libs/*' kafka.Kafka "$RUN"
START
# `redpanda` runs the start script; `rpk cluster health` is the base file's health check.
ln -sf /opt/kafka/start.sh "$k/bin/redpanda"
cat > "$k/bin/rpk" <<'RPK'
#!/bin/sh
# Stand-in for `rpk cluster health --exit-when-healthy`: healthy once the broker accepts connections.
exec nc -w 2 127.0.0.1 9092 </dev/null
RPK
chmod 755 "$k/bin/rpk"
chmod 755 "$k/opt/kafka/start.sh"

cat > "$work/kafka/Dockerfile" <<'DOCKERFILE'
# Stand-in for Redpanda: Apache Kafka 4.x, KRaft (see scripts/compose-standins/build.sh).
FROM scratch
COPY rootfs/ /
ENV PATH=/bin:/usr/bin HOME=/root
WORKDIR /var/lib/redpanda/data
VOLUME /var/lib/redpanda/data
EXPOSE 9092 19092
# busybox nc has no -z; with stdin at EOF it exits 0 right after connecting, 1 if refused.
HEALTHCHECK --interval=3s --retries=40 CMD ["/bin/sh", "-c", "nc -w 2 127.0.0.1 9092 </dev/null"]
CMD ["redpanda", "start"]
DOCKERFILE
log "kafka: docker build -t qim-standin/kafka:local"
"$DOCKER" build -q -t qim-standin/kafka:local "$work/kafka"

"$DOCKER" image ls --format '{{.Repository}}:{{.Tag}}  {{.Size}}' | grep '^qim-standin/' || true
log "done"

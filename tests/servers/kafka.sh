#!/usr/bin/env bash
# Apache Kafka as the tests' reference broker: one KRaft node (broker and controller in one
# process) on loopback, run from the Maven Central jars.
#
#   kafka.sh install            resolve the jars once into the cache (prints the lib dir)
#   kafka.sh installed          exit 0 when the jars are cached, 1 when not (no output)
#   kafka.sh start DIR [PORT]   format DIR (first start only) and start the node with its log
#                               dirs and logs in DIR; the broker listens on 127.0.0.1:PORT
#                               (default $STRATUS_KAFKA_PORT or 19092), the controller on a
#                               free port of its own; prints host:port once the port answers
#   kafka.sh stop DIR           stop the node started in DIR (by its pid file only)
#   kafka.sh status DIR         exit 0 and print host:port when it is running
#   kafka.sh tools              resolve the command-line tools once (`org.apache.kafka:kafka-tools`
#                               with its runtime dependencies: ProducerPerformance,
#                               ConsumerPerformance, TopicCommand, ...) and print their lib dir
#
# The jars (`org.apache.kafka:kafka_2.13` with its runtime dependencies) are cached in
# ${STRATUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stratus}/kafka-<version>/lib, the tools
# in kafka-<version>/tools (a classpath of their own: `java -cp "$tools/*" CLASS ARGS`).
# KAFKA_HEAP_OPTS overrides the JVM heap flags (default -Xmx512m -Xms256m),
# KAFKA_JVM_PERFORMANCE_OPTS the GC and JIT flags (default -XX:+UseSerialGC
# -XX:TieredStopAtLevel=1: a quick start, not a fast broker). KAFKA_SERVER_PROPS (lines of
# key=value) is appended to the generated server.properties; a key given there overrides
# the default above it (Java properties keep the last value). With
# KAFKA_REQUEST_LOG=1 every request the broker completes is logged to DIR/logs/requests.log
# (its header: API key and version, client id, client software name and version).
set -euo pipefail

KAFKA_VERSION=${KAFKA_VERSION:-4.4.0}
LOG4J_VERSION=2.25.5

cache_root=${STRATUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stratus}
home="$cache_root/kafka-$KAFKA_VERSION"
lib="$home/lib"
tools_lib="$home/tools"

log() { echo "[kafka.sh] $*" >&2; }
die() { log "$*"; exit 1; }

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] || die "usage: $0 install|installed|tools|start|stop|status DIR [PORT]"

installed() { [ -f "$lib/.done" ]; }

install() {
  if installed; then
    log "Kafka $KAFKA_VERSION cached in $lib"
    echo "$lib"
    return 0
  fi
  command -v mvn >/dev/null || die "Maven is needed to fetch the Kafka jars"
  command -v java >/dev/null || die "Java 17+ is needed to run Kafka"
  log "resolving Kafka $KAFKA_VERSION jars from Maven Central"
  local work
  work=$(mktemp -d)
  cat >"$work/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>org.stratus.test</groupId>
  <artifactId>kafka-server-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$KAFKA_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>$LOG4J_VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF
  rm -rf "$lib"
  mkdir -p "$lib"
  (cd "$work" && mvn -q -B -ntp -Dstyle.color=never dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$lib") >&2
  rm -rf "$work"
  [ -f "$lib/kafka_2.13-$KAFKA_VERSION.jar" ] || die "kafka_2.13-$KAFKA_VERSION.jar missing after resolution"
  touch "$lib/.done"
  echo "$lib"
}

tools() {
  if [ -f "$tools_lib/.done" ]; then
    echo "$tools_lib"
    return 0
  fi
  command -v mvn >/dev/null || die "Maven is needed to fetch the Kafka tools"
  command -v java >/dev/null || die "Java 17+ is needed to run the Kafka tools"
  log "resolving the Kafka $KAFKA_VERSION tools from Maven Central"
  local work
  work=$(mktemp -d)
  cat >"$work/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>org.stratus.test</groupId>
  <artifactId>kafka-tools-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-tools</artifactId>
      <version>$KAFKA_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>$LOG4J_VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF
  rm -rf "$tools_lib"
  mkdir -p "$tools_lib"
  (cd "$work" && mvn -q -B -ntp -Dstyle.color=never dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$tools_lib") >&2
  rm -rf "$work"
  [ -f "$tools_lib/kafka-tools-$KAFKA_VERSION.jar" ] || die "kafka-tools-$KAFKA_VERSION.jar missing after resolution"
  touch "$tools_lib/.done"
  echo "$tools_lib"
}

need_dir() {
  [ -n "$dir" ] || die "usage: $0 $cmd DIR [PORT]"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd -P)
}

running() { [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; }

port_answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

java_flags() { # the JVM options of both the storage tool and the server, one per line
  # shellcheck disable=SC2086 # the heap options are a word list
  printf '%s\n' ${KAFKA_HEAP_OPTS:--Xmx512m -Xms256m} \
    ${KAFKA_JVM_PERFORMANCE_OPTS:--XX:+UseSerialGC -XX:TieredStopAtLevel=1} \
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$lib/*"
}

start() {
  need_dir
  local port=${3:-${STRATUS_KAFKA_PORT:-19092}}
  if running; then
    log "already running in $dir"
    cat "$dir/addr"
    return 0
  fi
  installed || install >/dev/null
  local t0 ctrl
  t0=$(date +%s%N)
  port_answers "$port" && die "port $port is already in use"
  # A formatted log dir keeps its controller address: a restart reuses the first one.
  if [ -f "$dir/controller-port" ] && [ -f "$dir/data/meta.properties" ]; then
    ctrl=$(cat "$dir/controller-port")
  else
    ctrl=$(free_port)
  fi
  local -a jvm
  mapfile -t jvm < <(java_flags)
  mkdir -p "$dir/logs"
  cat >"$dir/log4j2.properties" <<EOF
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = $dir/logs/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
EOF
  if [ "${KAFKA_REQUEST_LOG:-0}" = 1 ]; then
    cat >>"$dir/log4j2.properties" <<EOF
appender.requests.type = File
appender.requests.name = requests
appender.requests.fileName = $dir/logs/requests.log
appender.requests.layout.type = PatternLayout
appender.requests.layout.pattern = %m%n
logger.request.name = kafka.request.logger
logger.request.level = DEBUG
logger.request.additivity = false
logger.request.appenderRef.requests.ref = requests
EOF
  fi
  cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$ctrl
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$ctrl
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
delete.topic.enable=true
log.flush.interval.messages=9223372036854775807
EOF
  if [ -n "${KAFKA_SERVER_PROPS:-}" ]; then
    printf '%s\n' "$KAFKA_SERVER_PROPS" >>"$dir/server.properties"
  fi
  if [ ! -f "$dir/data/meta.properties" ]; then
    local cluster_id
    # What `StorageTool random-uuid` prints (16 random bytes, base64url, never starting with
    # '-', which the tool's argument parser would take for an option), without a JVM.
    cluster_id=$(python3 -c '
import base64, uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    if not s.startswith("-"):
        print(s)
        break')
    java "${jvm[@]}" kafka.tools.StorageTool format --standalone -t "$cluster_id" \
      -c "$dir/server.properties" >"$dir/logs/format.log" 2>&1 ||
      { cat "$dir/logs/format.log" >&2; die "storage format failed"; }
    echo "$ctrl" >"$dir/controller-port"
  fi
  nohup java "${jvm[@]}" kafka.Kafka "$dir/server.properties" >"$dir/logs/stdout.log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  echo "127.0.0.1:$port" >"$dir/addr"
  local deadline=$(($(date +%s) + 60))
  until port_answers "$port"; do
    if ! running; then
      tail -n 30 "$dir/logs/stdout.log" "$dir/logs/server.log" >&2 2>/dev/null || true
      rm -f "$dir/pid"
      die "Kafka exited during start"
    fi
    [ "$(date +%s)" -lt "$deadline" ] || { tail -n 30 "$dir/logs/server.log" >&2 || true; die "Kafka did not listen on $port within 60 s"; }
    sleep 0.2
  done
  log "Kafka $KAFKA_VERSION ready on 127.0.0.1:$port in $((($(date +%s%N) - t0) / 1000000)) ms"
  cat "$dir/addr"
}

stop() {
  need_dir
  if ! running; then
    log "not running in $dir"
    rm -f "$dir/pid"
    return 0
  fi
  local pid
  pid=$(cat "$dir/pid")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$dir/pid"; return 0; }
    sleep 0.1
  done
  log "Kafka did not stop within 10 s after SIGTERM; killing it"
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$dir/pid"
}

case "$cmd" in
  install) install ;;
  installed) installed ;;
  tools) tools ;;
  start) start "$@" ;;
  stop) stop ;;
  status)
    need_dir
    if running; then cat "$dir/addr"; else log "not running in $dir"; exit 3; fi
    ;;
  *) die "unknown command $cmd (install|installed|tools|start|stop|status)" ;;
esac

#!/usr/bin/env bash
# Build / install the real-client test programs.
#   install.sh [java49|java5|go|python|cpp|rust|mqadmin|prometheus|
#               kafka-java|kafka-java3|kafka-python|kafka-go|kafka-server|all]...   (default: all)
# Idempotent: a client whose outputs are newer than its sources is skipped.
# Needs Java 17 + Maven, Go, Python 3 and Rust preinstalled; everything else comes
# from Maven Central, the Go module proxy, PyPI and crates.io; Prometheus (for the metrics
# test) is Debian's package (tests/servers/prometheus.sh); the reference Kafka broker
# (kafka-server) is Apache Kafka's jars from Maven Central (tests/servers/kafka.sh).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"

log() { echo "[install.sh] $*" >&2; }

# newer_than OUTPUT SOURCES... : true when OUTPUT exists and is newer than every source file.
newer_than() {
  local out=$1
  shift
  [ -e "$out" ] || return 1
  [ -z "$(find "$@" -newer "$out" -type f -print -quit 2>/dev/null)" ]
}

timed() { # name command...
  local name=$1 start
  shift
  start=$(date +%s)
  "$@"
  log "$name ready in $(($(date +%s) - start)) s"
}

build_java() { # java49|java5
  local d=$1 jar="$here/$1/target/rmq-client-$1-1.jar"
  if newer_than "$jar" "$here/$d/pom.xml" "$here/java-src" && [ -d "$here/$d/target/lib" ]; then
    log "$d up to date"
    return 0
  fi
  log "building $d (Maven)"
  (cd "$here/$d" && mvn -B -q -ntp -Dstyle.color=never package)
  touch "$jar"
}

build_go() {
  local bin="$here/go/bin/rmq-client-go"
  if newer_than "$bin" "$here/go/main.go" "$here/go/go.mod" "$here/go/go.sum"; then
    log "go up to date"
    return 0
  fi
  log "building go"
  (cd "$here/go" && go build -mod=mod -buildvcs=false -o bin/rmq-client-go .)
}

build_python() {
  local venv="$here/python/.venv" stamp="$here/python/.venv/.installed-0.4.4"
  if [ -e "$stamp" ]; then
    log "python (C++ client) up to date"
    return 0
  fi
  log "installing python venv with rocketmq==0.4.4 (C++ 1.x core)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check rocketmq==0.4.4
  # Fail now, not in the harness, if the bundled librocketmq.so cannot be loaded.
  "$venv/bin/python" -c "import rocketmq.client"
  touch "$stamp"
}

build_rust() {
  local bin="$here/rust/target/debug/rmq-client"
  if newer_than "$bin" "$here/rust/src" "$here/rust/Cargo.toml" "$here/rust/Cargo.lock"; then
    log "rust up to date"
    return 0
  fi
  log "building rust (rocketmq-client-rust 1.0.0; ~200 s and ~2 GB on a clean build)"
  (cd "$here/rust" && CARGO_TARGET_DIR="$here/rust/target" cargo build --locked)
  touch "$bin"
}

build_kafka_java() { # kafka-java|kafka-java3
  local d=$1 jar="$here/$1/target/kafka-client-${1#kafka-}-1.jar"
  if newer_than "$jar" "$here/$d/pom.xml" "$here/kafka-java/src" && [ -d "$here/$d/target/lib" ]; then
    log "$d up to date"
    return 0
  fi
  log "building $d (Maven)"
  (cd "$here/$d" && mvn -B -q -ntp -Dstyle.color=never package)
  touch "$jar"
}

build_kafka_go() {
  local bin="$here/kafka-go/bin/kafka-client-go"
  if newer_than "$bin" "$here/kafka-go/main.go" "$here/kafka-go/go.mod" "$here/kafka-go/go.sum"; then
    log "kafka-go up to date"
    return 0
  fi
  log "building kafka-go (franz-go)"
  (cd "$here/kafka-go" && go build -mod=mod -buildvcs=false -o bin/kafka-client-go .)
}

build_kafka_python() {
  local venv="$here/kafka-python/.venv" stamp="$here/kafka-python/.venv/.installed-2.16.1"
  if [ -e "$stamp" ]; then
    log "kafka-python (librdkafka) up to date"
    return 0
  fi
  log "installing kafka-python venv with confluent-kafka==2.16.1 (bundled librdkafka)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check confluent-kafka==2.16.1
  "$venv/bin/python" -c "import confluent_kafka"
  touch "$stamp"
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(all)
for t in "${targets[@]}"; do
  case $t in
    java49|java5) timed "$t" build_java "$t" ;;
    go) timed go build_go ;;
    python|cpp) timed python build_python ;;
    rust) timed rust build_rust ;;
    mqadmin) timed mqadmin bash "$here/mqadmin.sh" install ;;
    prometheus) timed prometheus bash "$here/../servers/prometheus.sh" install >/dev/null ;;
    kafka-java|kafka-java3) timed "$t" build_kafka_java "$t" ;;
    kafka-go) timed kafka-go build_kafka_go ;;
    kafka-python) timed kafka-python build_kafka_python ;;
    kafka-server) timed kafka-server bash "$here/../servers/kafka.sh" install >/dev/null ;;
    all)
      timed java49 build_java java49
      timed java5 build_java java5
      timed go build_go
      timed python build_python
      timed rust build_rust
      timed mqadmin bash "$here/mqadmin.sh" install
      timed prometheus bash "$here/../servers/prometheus.sh" install >/dev/null
      timed kafka-java build_kafka_java kafka-java
      timed kafka-java3 build_kafka_java kafka-java3
      timed kafka-go build_kafka_go
      timed kafka-python build_kafka_python
      timed kafka-server bash "$here/../servers/kafka.sh" install >/dev/null
      ;;
    *) echo "unknown client $t (java49, java5, go, python|cpp, rust, mqadmin, prometheus, kafka-java, kafka-java3, kafka-go, kafka-python, kafka-server, all)" >&2; exit 64 ;;
  esac
done

#!/usr/bin/env bash
# Run one built test client with the common CLI:
#   run.sh java49|java5|go|cpp|rust produce|consume|pull|txn [args...]
#   run.sh kafka-java|kafka-java3|kafka-python|kafka-go produce|consume|... [args...]
# Build them first with install.sh. Client logs and local state go to
# $STRATUS_CLIENT_STATE (default ${TMPDIR:-/tmp}/stratus-test-clients/<client>).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
client=${1:?usage: run.sh java49|java5|go|cpp|rust produce|consume|pull|txn [args...]}
shift
state=${STRATUS_CLIENT_STATE:-${TMPDIR:-/tmp}/stratus-test-clients/$client}
mkdir -p "$state"

case $client in
  java49|java5)
    dir=$here/$client
    [ -f "$dir/target/rmq-client-$client-1.jar" ] || { echo "$client is not built: run install.sh $client" >&2; exit 127; }
    exec java ${JAVA_CLIENT_OPTS:--Xms64m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1} \
      -Duser.home="$state" -Drocketmq.client.logRoot="$state/logs" \
      -Drocketmq.client.logLevel=${ROCKETMQ_CLIENT_LOG_LEVEL:-INFO} \
      -cp "$dir/target/rmq-client-$client-1.jar:$dir/target/lib/*" org.stratus.testclient.RmqClient "$@"
    ;;
  go)
    bin=$here/go/bin/rmq-client-go
    [ -x "$bin" ] || { echo "go is not built: run install.sh go" >&2; exit 127; }
    HOME="$state" exec "$bin" "$@"
    ;;
  cpp|python)
    py=$here/python/.venv/bin/python
    [ -x "$py" ] || { echo "python/cpp is not installed: run install.sh python" >&2; exit 127; }
    # The C++ core logs to $HOME/logs/rocketmq-cpp/.
    HOME="$state" PYTHONUNBUFFERED=1 exec "$py" "$here/python/rmq_client.py" "$@"
    ;;
  rust)
    bin=$here/rust/target/debug/rmq-client
    [ -x "$bin" ] || { echo "rust is not built: run install.sh rust" >&2; exit 127; }
    HOME="$state" exec "$bin" "$@"
    ;;
  kafka-java|kafka-java3)
    dir=$here/$client
    jar=$dir/target/kafka-client-${client#kafka-}-1.jar
    [ -f "$jar" ] || { echo "$client is not built: run install.sh $client" >&2; exit 127; }
    exec java ${JAVA_CLIENT_OPTS:--Xms32m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto} \
      -Duser.home="$state" -cp "$jar:$dir/target/lib/*" org.stratus.kafkaclient.KafkaClient "$@"
    ;;
  kafka-python)
    py=$here/kafka-python/.venv/bin/python
    [ -x "$py" ] || { echo "kafka-python is not installed: run install.sh kafka-python" >&2; exit 127; }
    HOME="$state" PYTHONUNBUFFERED=1 exec "$py" "$here/kafka-python/kafka_client.py" "$@"
    ;;
  kafka-go)
    bin=$here/kafka-go/bin/kafka-client-go
    [ -x "$bin" ] || { echo "kafka-go is not built: run install.sh kafka-go" >&2; exit 127; }
    HOME="$state" exec "$bin" "$@"
    ;;
  *)
    echo "unknown client $client (java49, java5, go, cpp, rust, kafka-java, kafka-java3, kafka-python, kafka-go)" >&2
    exit 64
    ;;
esac

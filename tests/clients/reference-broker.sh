#!/usr/bin/env bash
# Download and run a reference Apache RocketMQ 5.x name server + broker (from Maven Central).
#
#   reference-broker.sh install DIR     fetch jars into DIR/lib (idempotent)
#   reference-broker.sh start DIR       start namesrv (127.0.0.1:$NAMESRV_PORT) and broker
#                                       (127.0.0.1:$BROKER_PORT) registered with it
#   reference-broker.sh stop DIR        stop both (by the pids recorded in DIR)
#   reference-broker.sh status DIR
#
# Env: ROCKETMQ_VERSION (default 5.3.3), NAMESRV_PORT (9876), BROKER_PORT (10911),
#      JAVA_HEAP (512m), REFERENCE_BROKER_EXTRA_CONF (extra broker.conf lines key=value,
#      separated by whitespace/newlines, appended last so they override, e.g.
#      "transactionCheckInterval=5000 transactionTimeOut=3000").
# Everything (store, logs, pids) lives under DIR.
set -euo pipefail
cmd=${1:?usage: reference-broker.sh install|start|stop|status DIR}
dir=${2:?usage: reference-broker.sh install|start|stop|status DIR}
VERSION=${ROCKETMQ_VERSION:-5.3.3}
NAMESRV_PORT=${NAMESRV_PORT:-9876}
BROKER_PORT=${BROKER_PORT:-10911}
HEAP=${JAVA_HEAP:-512m}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

install() {
  if [ -f "$dir/lib/.done-$VERSION" ]; then return 0; fi
  mkdir -p "$dir/fetch"
  cat > "$dir/fetch/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.stratus</groupId><artifactId>reference-broker</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-namesrv</artifactId><version>$VERSION</version></dependency>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-broker</artifactId><version>$VERSION</version></dependency>
  </dependencies>
</project>
POM
  rm -rf "$dir/lib"
  (cd "$dir/fetch" && mvn -B -q dependency:copy-dependencies -DoutputDirectory="$dir/lib" -DincludeScope=runtime)
  touch "$dir/lib/.done-$VERSION"
}

wait_port() { # port seconds
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  return 1
}

start() {
  install
  mkdir -p "$dir/home/conf" "$dir/store" "$dir/logs"
  cat > "$dir/broker.conf" <<CONF
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
brokerIP1=127.0.0.1
listenPort=$BROKER_PORT
namesrvAddr=127.0.0.1:$NAMESRV_PORT
autoCreateTopicEnable=true
autoCreateSubscriptionGroup=true
defaultTopicQueueNums=4
flushDiskType=ASYNC_FLUSH
brokerRole=ASYNC_MASTER
deleteWhen=04
fileReservedTime=1
storePathRootDir=$dir/store
storePathCommitLog=$dir/store/commitlog
mappedFileSizeCommitLog=134217728
enablePropertyFilter=true
CONF
  # NamesrvStartup (5.3.3) starts from listenPort 9876 and then applies the -c file to
  # NamesrvConfig and NettyServerConfig (MixAll.properties2Object: key listenPort).
  cat > "$dir/namesrv.conf" <<CONF
listenPort=$NAMESRV_PORT
CONF
  local line
  set -f
  for line in ${REFERENCE_BROKER_EXTRA_CONF:-}; do
    case $line in
      *=*) echo "$line" >>"$dir/broker.conf" ;;
      *) echo "REFERENCE_BROKER_EXTRA_CONF: not key=value: $line" >&2; exit 64 ;;
    esac
  done
  set +f
  local jopts=(-Xms"$HEAP" -Xmx"$HEAP" -XX:+UseG1GC -Duser.home="$dir/home" -Drocketmq.home.dir="$dir/home")
  export ROCKETMQ_HOME="$dir/home"
  if ! wait_port "$NAMESRV_PORT" 0; then
    nohup java "${jopts[@]}" -cp "$dir/lib/*" org.apache.rocketmq.namesrv.NamesrvStartup \
      -c "$dir/namesrv.conf" >"$dir/logs/namesrv.out" 2>&1 &
    echo $! >"$dir/namesrv.pid"
    wait_port "$NAMESRV_PORT" 60 || { echo "namesrv did not start" >&2; tail -20 "$dir/logs/namesrv.out" >&2; exit 1; }
  fi
  nohup java "${jopts[@]}" -cp "$dir/lib/*" org.apache.rocketmq.broker.BrokerStartup \
    -n "127.0.0.1:$NAMESRV_PORT" -c "$dir/broker.conf" >"$dir/logs/broker.out" 2>&1 &
  echo $! >"$dir/broker.pid"
  wait_port "$BROKER_PORT" 90 || { echo "broker did not start" >&2; tail -20 "$dir/logs/broker.out" >&2; exit 1; }
  # The broker registers with the name server shortly after it listens.
  sleep 3
  echo "namesrv 127.0.0.1:$NAMESRV_PORT broker 127.0.0.1:$BROKER_PORT"
}

stop() {
  local f pid
  for f in broker namesrv; do
    if [ -f "$dir/$f.pid" ]; then
      pid=$(cat "$dir/$f.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$dir/$f.pid"
    fi
  done
}

status() {
  local f
  for f in namesrv broker; do
    if [ -f "$dir/$f.pid" ] && kill -0 "$(cat "$dir/$f.pid")" 2>/dev/null; then echo "$f running"; else echo "$f stopped"; fi
  done
}

case $cmd in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "unknown command $cmd" >&2; exit 64 ;;
esac

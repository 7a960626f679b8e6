#!/usr/bin/env bash
# MinIO as the tests' S3 server: a separate process on loopback (MinIO is AGPL-3.0; it is
# only ever run as a test server, never linked into Stratus).
#
#   minio.sh install              build the pinned MinIO once into the cache (prints its path)
#   minio.sh start DIR            start it with its data and state in DIR, create the bucket,
#                                 print STRATUS_TEST_S3=endpoint,bucket,key,secret (also DIR/env)
#   minio.sh stop DIR             stop the server started in DIR (by its pid file only)
#   minio.sh status DIR           exit 0 and print the endpoint when it answers
#
# The binary comes from the Go module proxy (`go install github.com/minio/minio@<pseudo-version>`;
# MinIO publishes no semver tags, so the module version is the commit's pseudo-version) and is
# cached in ${STRATUS_CACHE:-$HOME/.cache/stratus}/minio-<version>/, so only the first run
# builds it (about 2.5 min on 2 cores from empty Go caches; 0 s after).
set -euo pipefail

MINIO_MODULE=github.com/minio/minio
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
BUCKET=stratus
ACCESS_KEY=stratus-test
SECRET_KEY=stratus-test-secret

cache_root=${STRATUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stratus}
bin_dir="$cache_root/minio-$MINIO_VERSION"
bin="$bin_dir/minio"

log() { echo "[minio.sh] $*" >&2; }
die() { log "$*"; exit 1; }

# True when $1 is a MinIO binary built from the pinned module version.
is_pinned() {
  [ -x "$1" ] && go version -m "$1" 2>/dev/null |
    awk -v m="$MINIO_MODULE" -v v="$MINIO_VERSION" '$1 == "mod" && $2 == m && $3 == v { ok = 1 } END { exit !ok }'
}

install() {
  command -v go >/dev/null || die "Go is needed to build MinIO (go install $MINIO_MODULE@$MINIO_VERSION)"
  if is_pinned "$bin"; then
    log "MinIO $MINIO_VERSION cached at $bin"
    echo "$bin"
    return 0
  fi
  local start tmp
  start=$(date +%s)
  log "building MinIO $MINIO_VERSION from the Go module proxy (first run only)"
  mkdir -p "$bin_dir"
  tmp=$(mktemp -d "$bin_dir/.build.XXXXXX")
  GOBIN="$tmp" GOTOOLCHAIN=local GOFLAGS=-mod=mod go install "$MINIO_MODULE@$MINIO_VERSION" >&2
  is_pinned "$tmp/minio" || die "the built binary does not report $MINIO_MODULE $MINIO_VERSION"
  mv "$tmp/minio" "$bin"
  rmdir "$tmp"
  log "MinIO built in $(($(date +%s) - start)) s: $bin"
  echo "$bin"
}

# A loopback port nothing answers on, from 19000 up.
free_port() {
  local p
  for p in $(seq 19000 19999); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  die "no free port in 19000-19999"
}

sigv4() { # curl args... (signed with the test credentials)
  curl -sS --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ACCESS_KEY:$SECRET_KEY" "$@"
}

start() {
  local dir=$1 port endpoint pid code i
  [ -x "$bin" ] || install >/dev/null
  mkdir -p "$dir/data"
  dir=$(cd "$dir" && pwd)
  if status "$dir" >/dev/null 2>&1; then
    die "a MinIO started in $dir is already running ($(cat "$dir/endpoint"))"
  fi
  port=$(free_port)
  endpoint="http://127.0.0.1:$port"
  MINIO_ROOT_USER=$ACCESS_KEY MINIO_ROOT_PASSWORD=$SECRET_KEY MINIO_BROWSER=off \
    MINIO_UPDATE=off MINIO_CI_CD=1 \
    nohup "$bin" server --quiet --address "127.0.0.1:$port" "$dir/data" \
    >"$dir/minio.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$dir/minio.pid"
  echo "$endpoint" >"$dir/endpoint"
  for i in $(seq 1 300); do
    if curl -sf -o /dev/null "$endpoint/minio/health/live"; then
      break
    fi
    kill -0 "$pid" 2>/dev/null || die "MinIO exited at start; log: $(tail -20 "$dir/minio.log")"
    [ "$i" -lt 300 ] || die "MinIO did not answer within 30 s; log: $(tail -20 "$dir/minio.log")"
    sleep 0.1
  done
  # Create the bucket (200; 409 when it is already there from an earlier start of DIR).
  # /minio/health/live (and, at this version, /minio/health/ready too: it only adds the header
  # x-minio-server-status: offline) answers 200 before the object layer and IAM are up, and
  # requests meanwhile get 503 XMinioServerNotInitialized / XMinioIAMNotInitialized. So retry
  # while the answer is a 5xx or no answer (000), for about 30 s; any other code is final.
  for i in $(seq 1 150); do
    code=$(sigv4 -o "$dir/bucket.out" -w '%{http_code}' -X PUT "$endpoint/$BUCKET" 2>"$dir/bucket.err") || true
    case "$code" in
      200 | 409) break ;;
      000 | 5??) ;;
      *) die "cannot create bucket $BUCKET (HTTP $code): $(cat "$dir/bucket.out" "$dir/bucket.err" 2>/dev/null)" ;;
    esac
    kill -0 "$pid" 2>/dev/null || die "MinIO exited at start; log: $(tail -20 "$dir/minio.log")"
    [ "$i" -lt 150 ] ||
      die "cannot create bucket $BUCKET after $i attempts in 30 s (last: HTTP $code): $(cat "$dir/bucket.out" "$dir/bucket.err" 2>/dev/null)"
    sleep 0.2
  done
  [ "$i" -eq 1 ] || log "bucket $BUCKET created at attempt $i (MinIO was still initialising)"
  echo "STRATUS_TEST_S3=$endpoint,$BUCKET,$ACCESS_KEY,$SECRET_KEY" | tee "$dir/env"
  log "MinIO $MINIO_VERSION on $endpoint (pid $pid, data in $dir/data)"
}

stop() {
  local dir=$1 pid i
  [ -f "$dir/minio.pid" ] || { log "nothing started in $dir"; return 0; }
  pid=$(cat "$dir/minio.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for i in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  fi
  rm -f "$dir/minio.pid"
  log "MinIO in $dir stopped"
}

status() {
  local dir=$1 pid
  [ -f "$dir/minio.pid" ] && [ -f "$dir/endpoint" ] || { echo "stopped"; return 1; }
  pid=$(cat "$dir/minio.pid")
  if kill -0 "$pid" 2>/dev/null && curl -sf -o /dev/null "$(cat "$dir/endpoint")/minio/health/live"; then
    echo "running $(cat "$dir/endpoint") (pid $pid)"
    return 0
  fi
  echo "stopped"
  return 1
}

cmd=${1:-}
case "$cmd" in
  install) install ;;
  start | stop | status)
    [ $# -ge 2 ] || die "usage: $0 $cmd DIR"
    "$cmd" "$2"
    ;;
  *) die "usage: $0 install | start DIR | stop DIR | status DIR" ;;
esac

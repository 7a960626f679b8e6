#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests, on loopback.
#
#
# Usage: tests/servers/postgres.sh install|start|stop|status DIR [PORT]
#   install   installs PostgreSQL from Debian packages unless initdb and pg_ctl are found
#   start     installs if needed, creates the cluster in DIR/data (first start only) and
#             starts it on 127.0.0.1:PORT (default $STRATUS_PG_PORT or 15432), socket in DIR;
#             prints the URL on stdout: postgres://postgres@127.0.0.1:PORT/postgres
#   stop      stops the cluster of DIR (no-op when it is not running)
#   status    prints the URL and exits 0 when running, exits 3 when not
#
# Trust authentication, fsync off: for tests only. Running as root, the server runs as the
# `postgres` user (DIR is chowned to it; every parent of DIR must be world-executable).
set -euo pipefail

log() { printf 'postgres.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] || die "usage: $0 install|start|stop|status DIR [PORT]"

# initdb/pg_ctl on PATH, else the newest /usr/lib/postgresql/*/bin.
find_bindir() {
  local initdb
  if initdb=$(command -v initdb) && command -v pg_ctl >/dev/null; then
    dirname "$(readlink -f "$initdb")"
    return 0
  fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
    echo "$d"
    return 0
  fi
  return 1
}

install() {
  if bindir=$(find_bindir); then
    log "PostgreSQL found in $bindir"
    return 0
  fi
  [ "$(id -u)" = 0 ] || die "initdb not found and not root: install PostgreSQL first"
  log "installing PostgreSQL from Debian packages"
  apt-get update >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql >&2
  bindir=$(find_bindir) || die "initdb still not found after installing postgresql"
}

# Runs a PostgreSQL tool as the cluster's owner.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

need_dir() {
  [ -n "$dir" ] || die "usage: $0 $cmd DIR [PORT]"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd -P)
}

url() { echo "postgres://postgres@127.0.0.1:$1/postgres"; }

running() { [ -f "$dir/data/postmaster.pid" ] && as_owner "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; }

case "$cmd" in
  install)
    install
    ;;
  start)
    need_dir
    install
    port=${3:-${STRATUS_PG_PORT:-15432}}
    if [ "$(id -u)" = 0 ]; then
      id postgres >/dev/null 2>&1 || die "user postgres missing (install the postgresql package)"
      # The server (user postgres) must be able to reach DIR.
      p=$(dirname "$dir")
      while [ "$p" != / ]; do
        [ "$(stat -c %A "$p" | cut -c10)" = x ] || [ "$(stat -c %A "$p" | cut -c10)" = t ] ||
          die "$p is not world-executable: choose a DIR whose parents are"
        p=$(dirname "$p")
      done
      chown postgres "$dir"
    fi
    if running; then
      log "already running in $dir"
      url "$(cat "$dir/port")"
      exit 0
    fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      as_owner "$bindir/initdb" -D "$dir/data" -A trust -U postgres --no-sync \
        -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    fi
    echo "$port" >"$dir/port"
    if ! as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 30 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
      start >&2; then
      tail -n 20 "$dir/log" >&2 || true
      die "pg_ctl start failed (port $port in use?)"
    fi
    url "$port"
    ;;
  stop)
    need_dir
    bindir=$(find_bindir) || exit 0
    if running; then
      as_owner "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >&2
    else
      log "not running in $dir"
    fi
    ;;
  status)
    need_dir
    bindir=$(find_bindir) || exit 3
    if running; then
      url "$(cat "$dir/port")"
    else
      log "not running in $dir"
      exit 3
    fi
    ;;
  *)
    die "unknown command $cmd (install|start|stop|status)"
    ;;
esac

#!/usr/bin/env bash
# Prometheus for the metrics tests (a separate process on loopback, Debian's package).
#
#   prometheus.sh install     make a prometheus binary available and print its path:
#                             one on PATH, else `apt-get install prometheus`, else the
#                             package downloaded with `apt-get download` and unpacked into
#                             the cache (no service is started either way)
#   prometheus.sh path        print the binary's path; exit 3 when there is none
#
# The tests start their own server with their own config (tests/tests/ops_stats.rs).
set -euo pipefail

cache_root=${STRATUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stratus}
unpacked="$cache_root/prometheus/usr/bin/prometheus"

log() { echo "[prometheus.sh] $*" >&2; }
die() { log "$*"; exit 1; }

find_bin() {
  local p
  if p=$(command -v prometheus 2>/dev/null) && "$p" --version >/dev/null 2>&1; then
    echo "$p"
    return 0
  fi
  if [ -x "$unpacked" ] && "$unpacked" --version >/dev/null 2>&1; then
    echo "$unpacked"
    return 0
  fi
  return 1
}

unpack_deb() {
  command -v apt-get >/dev/null || return 1
  command -v dpkg-deb >/dev/null || return 1
  local tmp
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" RETURN
  (cd "$tmp" && apt-get download prometheus >&2) || {
    [ "$(id -u)" = 0 ] && apt-get update -qq >&2 && (cd "$tmp" && apt-get download prometheus >&2)
  } || return 1
  mkdir -p "$cache_root/prometheus"
  dpkg-deb -x "$tmp"/prometheus_*.deb "$cache_root/prometheus"
}

install() {
  local p
  if p=$(find_bin); then
    echo "$p"
    return 0
  fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing Debian's prometheus package"
    # The package's service is not wanted: policy-rc.d keeps it from being started.
    local policy=/usr/sbin/policy-rc.d made=0
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >&2 ||
      { apt-get update -qq >&2 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >&2; } ||
      log "apt-get install failed; trying the package file"
    [ "$made" = 1 ] && rm -f "$policy"
    if p=$(find_bin); then
      echo "$p"
      return 0
    fi
  fi
  log "unpacking the prometheus package into $cache_root/prometheus"
  unpack_deb || die "cannot install prometheus (apt-get install and apt-get download both failed)"
  p=$(find_bin) || die "the unpacked prometheus does not run"
  echo "$p"
}

case ${1:-} in
  install) install ;;
  path) find_bin || exit 3 ;;
  *) die "usage: $0 install|path" ;;
esac

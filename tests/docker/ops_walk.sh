#!/usr/bin/env bash
# The operator's walk on the docker-compose cluster, run from the guide itself: the `sh` blocks of
# docs/OPERATIONS.md, section "On the compose cluster: replace a node, back up and restore", each
# marked `<!-- ops-walk: NAME -->`, are extracted and run as written. Only the values of the
# `export` lines of the `setup` block are changed (project names, token, folders, ports); every
# other block runs in a fresh bash (errexit, nounset, pipefail) after that setup block.
#
#   1. skip (exit 0) when Docker or a compose tool is not usable here;
#   2. the image (scripts/build-image.sh, unless RAFTLANE_CI_SKIP_BUILD=1), the certificates
#      n1..n3 as docs/DOCKER.md §2 makes them (scripts/compose-certs.sh, a temporary folder), and
#      the cluster (docker-compose up -d), healthy; message A enqueued;
#   3. blocks `setup`, `lose` (n3 and its volume gone) and `replace` (n4's certificate, n4 added
#      as a learner, voters 1, 2, 4); then checked: the membership is voters {1,2,4} and no 3,
#      n4 serves the same digest as n1 and n2 at the same last_applied, message A is read through n4;
#   4. message X and an audit row; block `backup` (ctl snapshot save); the file is 0600; message Y
#      (after the backup);
#   5. block `restore` (raftlane restore per node into the restored project's volumes, the old
#      cluster stopped, the restored one started, a write); then checked: the three restores
#      printed one digest at one index, the three restored nodes agree on one digest at one
#      last_applied, messages A and X are there and Y is not, the audit chain's head is the one
#      taken before the backup, a new enqueue is accepted and read back from another node;
#   6. always: both projects `down -v` (trap), with the nodes' last log lines first on failure.
#
# Run from anywhere: bash tests/docker/ops_walk.sh
# Environment:
#   RAFTLANE_OPSWALK_PORT_BASE=27001  host ports n1..n4 = base..base+3 (away from 7001..7004 and
#                                     from compose_test.sh's 17001..17003)
#   RAFTLANE_CI_SKIP_BUILD=1          reuse the existing image (IMAGE, default raftlane:dev)
#   RAFTLANE_CI_KEEP=1                leave both clusters up at the end (debugging)
set -euo pipefail
cd "$(dirname "$0")/../.."

DOC=docs/OPERATIONS.md
PROJECT=raftlane-opswalk
RESTORED_PROJECT=raftlane-opswalk-restored
IMAGE="${IMAGE:-raftlane:dev}"
BASE="${RAFTLANE_OPSWALK_PORT_BASE:-27001}"
TOKEN=ops-walk-admin-token
started=$SECONDS

TAG=ops-walk
# --- 1. is Docker usable? (say, fail, COMPOSE; a SKIP and exit 0 where it is not) ---
# shellcheck source=tests/docker/lib.sh
source tests/docker/lib.sh   # the checkout's root is the working directory (above)

# The guide's commands say `docker-compose`; with only `docker compose` (v2) here, a function of
# that name in the blocks' shell stands for it.
COMPOSE_SHIM=""
if [ "${COMPOSE[*]}" = "docker compose" ]; then
  COMPOSE_SHIM='docker-compose() { docker compose "$@"; }'
fi

# What the compose file reads from the environment, pinned for this run; the same values go into
# the guide's setup block below (its export lines), so that the guide's commands and this
# script's own see one cluster.
WORK=""
mkdir -p .raftlane
export RAFTLANE_IMAGE="$IMAGE"
export RAFTLANE_CLUSTER_SECRET=ops-walk-cluster-secret
export RAFTLANE_LOG="${RAFTLANE_LOG:-info,openraft=error}"
export RAFTLANE_ADMIN_TOKEN="$TOKEN"
export RAFTLANE_N1_PORT=$BASE RAFTLANE_N2_PORT=$((BASE + 1)) RAFTLANE_N3_PORT=$((BASE + 2)) RAFTLANE_N4_PORT=$((BASE + 3))
unset COMPOSE_PROJECT_NAME COMPOSE_FILE COMPOSE_PROFILES RAFTLANE_CTL_ENDPOINTS

# dc PROJECT ARGS...: this script's own compose calls.
dc() { local p=$1; shift; timeout "${DC_TIMEOUT:-120}" "${COMPOSE[@]}" -p "$p" -f docker-compose.yml "$@"; }

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ -n "${BODY:-}" ] && rm -f "$BODY"
  if [ "$rc" -ne 0 ]; then
    for p in "$PROJECT" "$RESTORED_PROJECT"; do
      say "exit code $rc; last log lines of each node of $p:"
      dc "$p" --profile spare logs --no-color --tail 40 2>&1 || true
    done
  fi
  if [ "${RAFTLANE_CI_KEEP:-0}" = 1 ]; then
    say "RAFTLANE_CI_KEEP=1: leaving projects $PROJECT and $RESTORED_PROJECT (and $WORK) as they are"
  else
    for p in "$PROJECT" "$RESTORED_PROJECT"; do
      say "${COMPOSE[*]} -p $p down -v"
      dc "$p" --profile spare --profile tools down -v --remove-orphans >/dev/null 2>&1 \
        || say "warning: compose down of $p failed"
    done
    [ -n "$WORK" ] && rm -rf "$WORK"
  fi
  if [ "$rc" -eq 0 ]; then say "PASS"; fi
  exit "$rc"
}

# --- the guide's blocks ---
# block NAME: the body of the ```sh fence that follows `<!-- ops-walk: NAME -->` in the guide.
block() {
  awk -v name="$1" '
    $0 == "<!-- ops-walk: " name " -->" { marked = 1; next }
    marked == 1 && /^```sh[[:space:]]*$/ { inside = 1; marked = 0; found++; next }
    marked == 1 { marked = 0 }
    inside && /^```[[:space:]]*$/ { inside = 0; next }
    inside { print }
    END { if (found != 1) { print "ops-walk: block " name " found " found + 0 " times" > "/dev/stderr"; exit 1 } }
  ' "$DOC"
}
# The setup block with this run's values in its export lines: each documented variable must be
# exported on exactly one line of its own (`export NAME=VALUE  # comment`).
setup_block() {
  local text; text=$(block setup) || return 1
  local name value count
  for name in COMPOSE_PROJECT_NAME RESTORED RAFTLANE_ADMIN_TOKEN RAFTLANE_CERTS_DIR RAFTLANE_BACKUPS_DIR \
              RAFTLANE_N1_PORT RAFTLANE_N2_PORT RAFTLANE_N3_PORT RAFTLANE_N4_PORT; do
    case "$name" in
      COMPOSE_PROJECT_NAME) value=$PROJECT ;;
      RESTORED) value=$RESTORED_PROJECT ;;
      RAFTLANE_CERTS_DIR) value=$CERTS ;;
      RAFTLANE_BACKUPS_DIR) value=$BACKUPS ;;
      *) value=${!name} ;;
    esac
    count=$(grep -c "^export $name=" <<<"$text" || true)
    [ "$count" = 1 ] || { echo "ops-walk: the setup block exports $name on $count lines, not one" >&2; return 1; }
    text=$(NAME="$name" VALUE="$value" python3 -c '
import os, re, sys
name, value = os.environ["NAME"], os.environ["VALUE"]
sys.stdout.write(re.sub(r"^export " + name + r"=\S*", lambda m: "export " + name + "=" + value,
                        sys.stdin.read(), flags=re.M))' <<<"$text")
  done
  printf '%s\n' "$text"
}
# run_block NAME: the setup block, then block NAME, in a fresh bash from the checkout's root;
# the commands are printed first, their output (also kept in $WORK/NAME.log) indented.
run_block() {
  local name=$1 script="$WORK/$1.sh" rc
  {
    echo 'set -euo pipefail'
    echo "$COMPOSE_SHIM"
    setup_block
    echo "# ---- block $name ----"
    block "$name"
  } >"$script" || fail "cannot extract block '$name' from $DOC"
  say "guide block '$name' ($DOC):"
  block "$name" | sed 's/^/    $ /'
  set +e
  timeout "${BLOCK_TIMEOUT:-600}" bash "$script" </dev/null 2>&1 | tee "$WORK/$name.log" | sed 's/^/    | /'
  rc=${PIPESTATUS[0]}
  set -e
  [ "$rc" = 0 ] || fail "guide block '$name' failed (exit $rc)"
}

# --- HTTP and JSON helpers (curl + python3) ---
BODY=""
# api, json, health_of: tests/docker/lib.sh.

# enqueue ID KEY TEXT: POST to channel ops-walk through node ID until accepted (30 s). Prints the id.
enqueue() {
  local id=$1 key=$2 text=$3 deadline=$((SECONDS + 30)) code
  while :; do
    code=$(api "$id" POST /v1/channels/ops-walk/messages "{\"raw\":\"$text\",\"message_type\":\"ops.walk\"}" -H "Idempotency-Key: $key")
    case "$code" in 200|201) json "v['message_id']"; return 0 ;; esac
    [ "$SECONDS" -lt "$deadline" ] || { say "enqueue via n$id kept failing: $code $(cat "$BODY")" >&2; return 1; }
    sleep 1
  done
}
# read_message ID MSG: the status code of GET /v1/messages/MSG through node ID (linearizable).
read_message() { api "$1" GET "/v1/messages/$2"; }

# --- 2. image, certificates, cluster ---
ensure_image

trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
WORK=$(mktemp -d "$PWD/.raftlane/ops-walk.XXXXXX")
CERTS="$WORK/certs" BACKUPS="$WORK/backups"
mkdir -p "$CERTS"
export RAFTLANE_CERTS_DIR="$CERTS"
BODY="$WORK/body"
for name in setup lose replace backup restore; do
  block "$name" >/dev/null || fail "$DOC has no single ops-walk block '$name'"
done
setup_block >/dev/null || fail "$DOC's setup block does not export the variables this script sets"

say "removing leftovers of an earlier run of $PROJECT and $RESTORED_PROJECT, if any"
for p in "$PROJECT" "$RESTORED_PROJECT"; do
  dc "$p" --profile spare --profile tools down -v --remove-orphans >/dev/null 2>&1 || true
done
for id in 1 2 3 4; do
  p=$(port_of "$id")
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    fail "127.0.0.1:$p is already in use; set RAFTLANE_OPSWALK_PORT_BASE to a free range"
  fi
done
say "certificates for n1..n3 into $CERTS (scripts/compose-certs.sh, as docs/DOCKER.md §2)"
IMAGE="$IMAGE" scripts/compose-certs.sh "$CERTS" | sed 's/^/    /'
say "${COMPOSE[*]} -p $PROJECT up -d (127.0.0.1:$BASE..$((BASE + 2)))"
dc "$PROJECT" up -d 2>&1 | sed 's/^/    /'
running=$(dc "$PROJECT" ps --services --filter status=running | sort | tr '\n' ' ')
[ "$running" = "n1 n2 n3 " ] || fail "up -d started '$running', not exactly n1 n2 n3"
deadline=$((SECONDS + 120))
while :; do
  states="" all=1
  for id in 1 2 3; do
    s=$(health_of "$(dc "$PROJECT" ps -q "n$id")"); states+="n$id=$s "
    [ "$s" = healthy ] || all=0
  done
  [ "$all" = 1 ] && break
  [ "$SECONDS" -lt "$deadline" ] || fail "not healthy within 120 s: $states"
  sleep 2
done
say "healthy: $states"
id_a=$(enqueue 1 ops-a "message A, before n3 is lost") || fail "enqueue of message A failed"
say "message A has id $id_a"

# --- 3. replace a node ---
run_block lose
run_block replace
code=$(api 4 GET /v1/cluster)
[ "$code" = 200 ] || fail "GET /v1/cluster through n4: $code $(cat "$BODY")"
voters=$(json "','.join(str(m['id']) for m in v['membership'] if m['voter'])")
members=$(json "','.join(str(m['id']) for m in v['membership'])")
[ "$voters" = "1,2,4" ] || fail "voters after the replacement: $voters, not 1,2,4 ($(cat "$BODY"))"
[ "$members" = "1,2,4" ] || fail "members after the replacement: $members (3 still there?)"
say "membership through n4: voters $voters, members $members (no 3), leader $(json "v['leader_id']")"
converge 60 1 2 4
code=$(read_message 4 "$id_a")
[ "$code" = 200 ] || fail "n4 does not serve message A ($id_a): $code $(cat "$BODY")"
[ "$(json "v['message']['idempotency_key']")" = ops-a ] || fail "message A through n4: $(cat "$BODY")"
say "n4 serves message A ($id_a), written before n3 was lost"

# --- 4. back up ---
id_x=$(enqueue 1 ops-x "message X, before the backup") || fail "enqueue of message X failed"
code=$(api 2 POST /v1/audit '{"action":"ops.walk","detail":"before the backup"}')
case "$code" in 200|201) ;; *) fail "audit append: $code $(cat "$BODY")" ;; esac
code=$(api 4 GET "/v1/audit/verify?org=default")
[ "$code" = 200 ] && [ "$(json "v['ok']")" = True ] || fail "audit verify before the backup: $code $(cat "$BODY")"
head_before=$(json "v['head_hash']") count_before=$(json "v['count']")
say "message X has id $id_x; audit chain: $count_before rows, head ${head_before:0:16}"
run_block backup
[ -f "$BACKUPS/backup.snap" ] || fail "no backup at $BACKUPS/backup.snap"
mode=$(stat -c '%a %u' "$BACKUPS/backup.snap")
[ "$mode" = "600 65532" ] || fail "the backup is mode/owner '$mode', not '600 65532'"
saved_index=$(sed -n 's/^saved .*: index \([0-9]*\) .*/\1/p' "$WORK/backup.log")
[ -n "$saved_index" ] || fail "snapshot save printed no index"
say "backup: $(stat -c '%s bytes, mode %a, uid %u' "$BACKUPS/backup.snap"), index $saved_index"
id_y=$(enqueue 2 ops-y "message Y, after the backup") || fail "enqueue of message Y failed"
say "message Y has id $id_y (after the backup: the restored cluster must not have it)"

# --- 5. restore ---
run_block restore
restored=$(grep -c '^restored /backup.snap into /data as node [123] of voters 1,2,3: ' "$WORK/restore.log" || true)
[ "$restored" = 3 ] || fail "$restored restore lines, not 3"
printed=$(sed -n 's/^restored .*: index \([0-9]*\) (term [0-9]*), [0-9]* records, state digest \([0-9a-f]*\)$/\1 \2/p' "$WORK/restore.log" | sort -u)
[ "$(printf '%s\n' "$printed" | wc -l)" = 1 ] || fail "the restores printed different states: $printed"
[ "${printed%% *}" = "$saved_index" ] || fail "restored index ${printed%% *}, the backup's is $saved_index"
say "the three restores printed index ${printed%% *} and state digest ${printed#* }"
for id in 1 2 4; do
  s=$(docker inspect -f '{{.State.Status}}' "$(dc "$PROJECT" ps -q "n$id")" 2>/dev/null || echo gone)
  [ "$s" = exited ] || fail "old n$id is '$s', not stopped"
done
code=$(api 1 GET /v1/cluster)
[ "$code" = 200 ] || fail "GET /v1/cluster of the restored n1: $code"
[ "$(json "','.join(str(m['id']) for m in v['membership'] if m['voter'])")" = "1,2,3" ] \
  || fail "restored membership: $(cat "$BODY")"
[ "$(dc "$RESTORED_PROJECT" ps -q n1)" != "" ] || fail "no n1 in $RESTORED_PROJECT"
say "old cluster stopped; the restored one ($RESTORED_PROJECT) answers on the same ports with voters 1,2,3"
converge 60 1 2 3
for id in 1 2 3; do
  for m in "$id_a" "$id_x"; do
    code=$(read_message "$id" "$m")
    [ "$code" = 200 ] || fail "restored n$id does not serve message $m: $code $(cat "$BODY")"
  done
done
# Message ids go on from the backup's: the guide's own enqueue above may have taken Y's id on
# the restored cluster, so Y is looked for by its idempotency key, in its channel's listing.
code=$(api 3 GET "/v1/messages?channel=ops-walk&limit=100")
[ "$code" = 200 ] || fail "GET /v1/messages?channel=ops-walk on the restored n3: $code $(cat "$BODY")"
keys=$(json "','.join(sorted(str(m['idempotency_key']) for m in v['messages']))")
[ "$keys" = "ops-a,ops-x" ] || fail "restored channel ops-walk holds '$keys', not messages A and X only: $(cat "$BODY")"
say "restored n1..n3 serve messages A ($id_a) and X ($id_x); Y, written after the backup, is not there"
code=$(api 3 GET "/v1/audit/verify?org=default")
[ "$code" = 200 ] && [ "$(json "v['ok']")" = True ] || fail "audit verify on the restored cluster: $code $(cat "$BODY")"
[ "$(json "v['head_hash']")" = "$head_before" ] && [ "$(json "v['count']")" = "$count_before" ] \
  || fail "restored audit chain differs: $(cat "$BODY"), before the backup: $count_before rows, head $head_before"
say "restored audit chain verifies, $count_before rows, the head taken before the backup"
grep -q '"message_id"' "$WORK/restore.log" || fail "the guide's enqueue on the restored cluster printed no message id"
id_z=$(enqueue 3 ops-z "message Z, on the restored cluster") || fail "enqueue on the restored cluster failed"
code=$(read_message 1 "$id_z")
[ "$code" = 200 ] || fail "restored n1 does not serve message Z ($id_z): $code $(cat "$BODY")"
say "the restored cluster took the guide's write and message Z ($id_z, through n3, read back through n1)"
converge 60 1 2 3

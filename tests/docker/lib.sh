# Sourced by the compose tests (compose_test.sh, ops_walk.sh): what both need, once.
#
# - `say`, `fail` with the caller's TAG and start time;
# - whether Docker can run them here: where it cannot (no docker command, no daemon or no
#   permission, no compose), the caller exits 0 with a SKIP line naming itself; otherwise
#   COMPOSE holds the compose command (v1 `docker-compose` or v2 `docker compose`); curl and
#   python3 (JSON parsing) are required;
# - `port_of`, `api`, `json`, `health_of`, `ensure_image` and `converge` (each described below).
#
# The caller sets TAG (its progress prefix), started=$SECONDS, BASE (the published port of n1),
# IMAGE and TOKEN first; `api`, `json` and `converge` also use its CERTS and BODY.

say() { printf '[%s +%3ss] %s\n' "$TAG" "$((SECONDS - started))" "$*"; }
fail() { say "FAIL: $*"; exit 1; }

skip() { echo "SKIP: $0: $*"; exit 0; }
command -v docker >/dev/null 2>&1 || skip "no docker command on this machine"
timeout 30 docker info >/dev/null 2>&1 || skip "'docker info' failed (no daemon or no permission)"
if command -v docker-compose >/dev/null 2>&1; then
  COMPOSE=(docker-compose)
elif docker compose version >/dev/null 2>&1; then
  COMPOSE=(docker compose)
else
  skip "neither docker-compose nor 'docker compose' is installed"
fi
command -v curl >/dev/null 2>&1 || fail "curl is required"
command -v python3 >/dev/null 2>&1 || fail "python3 is required (JSON parsing)"

port_of() { echo $((BASE + $1 - 1)); }   # node id -> published host port

# api ID METHOD PATH [JSON] [extra curl args...]: status code on stdout, body in $BODY; node ID
# is dialled by its own name (nID:7001, the only name its certificate carries) at its published
# port on 127.0.0.1, verified with the CA.
api() {
  local id=$1 method=$2 path=$3 data=${4:-}
  shift 4 2>/dev/null || shift $#
  local args=(-sS --max-time 10 -o "$BODY" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $TOKEN")
  if [ -n "$data" ]; then args+=(-H 'Content-Type: application/json' --data "$data"); fi
  command curl "${args[@]}" --cacert "$CERTS/ca.pem" --connect-to "n$id:7001:127.0.0.1:$(port_of "$id")" "$@" \
    "https://n$id:7001$path" 2>/dev/null || echo 000
}

# json EXPR: evaluate EXPR on the JSON of $BODY as `v` (e.g. "v['leader_id']"); "null" on error.
json() {
  python3 -c 'import json,sys
try:
    v = json.load(open(sys.argv[1]))
    r = eval(sys.argv[2])
except Exception:
    r = None
print("null" if r is None else r)' "$BODY" "$1"
}

health_of() { docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' "$1" 2>/dev/null || echo gone; }

# ensure_image: $IMAGE as it stands with RAFTLANE_CI_SKIP_BUILD=1 (it must exist), else built
# now by scripts/build-image.sh.
ensure_image() {
  if [ "${RAFTLANE_CI_SKIP_BUILD:-0}" = 1 ]; then
    say "RAFTLANE_CI_SKIP_BUILD=1: using the existing image $IMAGE"
    docker image inspect "$IMAGE" >/dev/null 2>&1 || fail "image $IMAGE does not exist"
  else
    say "building $IMAGE with scripts/build-image.sh (cargo release build + docker build)"
    IMAGE="$IMAGE" timeout 3600 scripts/build-image.sh || fail "scripts/build-image.sh failed"
  fi
}

# converge SECONDS ID...: until the listed nodes answer one digest at one last_applied. The
# leader appends an entry every second (its housekeeping, stamped with the cluster's clock, which
# the digest covers), so the nodes are asked at once, by one curl, and again until they agree.
converge() {
  local limit=$1; shift
  local deadline=$((SECONDS + limit)) args=() urls=() id line
  for id in "$@"; do
    args+=(--connect-to "n$id:7001:127.0.0.1:$(port_of "$id")")
    urls+=("https://n$id:7001/v1/cluster/digest")
  done
  while :; do
    command curl -s --parallel --max-time 5 --cacert "$CERTS/ca.pem" -H "Authorization: Bearer $TOKEN" \
      -w '\n' "${args[@]}" "${urls[@]}" >"$BODY" 2>/dev/null || true
    line=$(python3 -c 'import json, sys
want = sorted(int(a) for a in sys.argv[2:])
got = {}
for text in open(sys.argv[1]):
    try:
        d = json.loads(text)
        got[d["node_id"]] = (d["last_applied"], d["digest"])
    except Exception:
        pass
print(("same " if sorted(got) == want and len(set(got.values())) == 1 else "differ ")
      + " ".join("n%d=%s" % (n, "%s/%s" % (got[n][0], got[n][1][:12]) if n in got else "none") for n in want))' \
      "$BODY" "$@")
    if [ "${line%% *}" = same ]; then say "converged: ${line#* }"; return 0; fi
    [ "$SECONDS" -lt "$deadline" ] || fail "digests did not converge within ${limit}s: ${line#* }"
    sleep 0.3
  done
}

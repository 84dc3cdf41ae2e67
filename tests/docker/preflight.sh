# Sourced by the compose tests (compose_test.sh, ops_walk.sh): `say` and `fail` with the
# caller's TAG and start time, and whether Docker can run them here. Where it cannot (no docker
# command, no daemon or no permission, no compose), the caller exits 0 with a SKIP line naming
# itself; otherwise COMPOSE holds the compose command (v1 `docker-compose` or v2 `docker
# compose`). curl and python3 (JSON parsing) are required.
#
# The caller sets TAG (its progress prefix) and started=$SECONDS first; `converge` also uses its
# port_of, CERTS, TOKEN and BODY.

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

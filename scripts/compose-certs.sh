#!/usr/bin/env bash
# TLS certificates for the compose cluster (docker-compose.yml): a CA and one certificate per
# node (n1, n2, n3; each also names localhost and 127.0.0.1, so tools on the host can dial the
# published ports), written by `raftlane certs` run from the image itself, so neither the host
# nor the image needs openssl.
#
# Usage: scripts/compose-certs.sh [DIR]     (default: $RAFTLANE_CERTS_DIR, else .raftlane/compose-certs)
#   IMAGE=raftlane:dev    the image whose binary writes them (scripts/build-image.sh builds it)
#   --force               replace certificates that already exist (default: keep them)
#
# The nodes run as uid 65532 and must read their keys, which are private (0600): the
# certificates are written by a container running as that user, so the keys belong to it. The
# host keeps ca.pem (0644) to verify the nodes: curl --cacert DIR/ca.pem https://127.0.0.1:7001/...
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${IMAGE:-raftlane:dev}"
FORCE=0
DIR=""
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "unknown argument: $arg" >&2; exit 2 ;;
    *) DIR="$arg" ;;
  esac
done
DIR="${DIR:-${RAFTLANE_CERTS_DIR:-.raftlane/compose-certs}}"

if [ "$FORCE" = 0 ] && [ -f "$DIR/ca.pem" ] && [ -f "$DIR/n1.pem" ] && [ -f "$DIR/n2.pem" ] && [ -f "$DIR/n3.pem" ]; then
  echo "certificates already in $DIR (--force to replace them)"
  exit 0
fi
docker image inspect "$IMAGE" >/dev/null 2>&1 || {
  echo "error: image $IMAGE not found; build it first with scripts/build-image.sh" >&2; exit 1; }

mkdir -p "$DIR"
rm -f "$DIR"/*.pem "$DIR"/*.key
# Writable by the container's user for the time of the run only.
chmod 0777 "$DIR"
trap 'chmod 0755 "$DIR"' EXIT
docker run --rm --network none -v "$(cd "$DIR" && pwd):/certs" "$IMAGE" \
  certs --out /certs --nodes n1,n2,n3 --extra-names localhost,127.0.0.1
echo "CA: $DIR/ca.pem (verify the nodes with it); node keys are readable by uid 65532 only"

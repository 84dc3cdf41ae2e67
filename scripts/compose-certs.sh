#!/usr/bin/env bash
# TLS certificates for the compose cluster (docker-compose.yml), written by `raftlane certs` run
# from the image itself, so neither the host nor the image needs openssl:
#
#   DIR/ca.pem                 the CA certificate: tools on the host verify the nodes with it
#   DIR/ca.key                 the CA key: stays here, no node mounts it
#   DIR/n1/ ca.pem n1.pem n1.key   what node n1 mounts (read-only, at /certs); n2/, n3/ alike
#                              (and n4/, the spare node's, with --nodes n1,n2,n3,n4)
#
# Node certificates carry server and client authentication (nodes dial each other over mutual
# TLS with them), and each names its own node only (n1, ...): no name is in two certificates, so
# no node's key can answer for another node. Host tools dial a node by its name, e.g.
#   curl --connect-to n1:7001:127.0.0.1:7001 https://n1:7001/readyz
# --shared-host-names also puts localhost and 127.0.0.1 in every node's certificate, so that
# https://127.0.0.1:7001 verifies; any node's key can then answer for those two names (and a
# client dialling 127.0.0.1 cannot tell the nodes apart): a knowing opt-in for a try-out.
#
# Usage: scripts/compose-certs.sh [--force] [--shared-host-names] [--nodes LIST] [DIR]
#   DIR                   default: $RAFTLANE_CERTS_DIR, else .raftlane/compose-certs
#   IMAGE=raftlane:dev    the image whose binary writes them (scripts/build-image.sh builds it)
#   --force               replace certificates that already exist (default: keep them)
#   --shared-host-names   also localhost and 127.0.0.1, in every node certificate
#   --nodes n1,n2,n3,n4   the nodes to write certificates for (default n1,n2,n3); n4 is
#                         docker-compose.yml's spare node. Every run makes a new CA, so a node
#                         added later needs the others' certificates made again in the same run
#   --no-host-names       accepted for older scripts: the default now
#
# The nodes run as uid 65532 and must read their keys, which are private (0600): the
# certificates are written by a container running as that user, so the keys belong to it, and
# the containers see only their own folder. Never commit DIR (.raftlane/ is git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${IMAGE:-raftlane:dev}"
FORCE=0
HOST_NAMES=0
DIR=""
NODES=(n1 n2 n3)
# set_nodes LIST: the comma-separated node names (each a folder and a DNS name).
set_nodes() {
  local IFS=, n
  read -r -a NODES <<<"$1"
  [ "${#NODES[@]}" -gt 0 ] || { echo "--nodes: no node named" >&2; exit 2; }
  for n in "${NODES[@]}"; do
    [[ "$n" =~ ^[a-z0-9][a-z0-9-]*$ ]] || { echo "--nodes: not a node name: '$n'" >&2; exit 2; }
  done
}
while [ "$#" -gt 0 ]; do
  arg=$1; shift
  case "$arg" in
    --force) FORCE=1 ;;
    --no-host-names) HOST_NAMES=0 ;;
    --shared-host-names) HOST_NAMES=1 ;;
    --nodes) [ "$#" -gt 0 ] || { echo "--nodes needs a list, e.g. n1,n2,n3,n4" >&2; exit 2; }
             set_nodes "$1"; shift ;;
    --nodes=*) set_nodes "${arg#--nodes=}" ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    -*) echo "unknown argument: $arg" >&2; exit 2 ;;
    *) DIR="$arg" ;;
  esac
done
DIR="${DIR:-${RAFTLANE_CERTS_DIR:-.raftlane/compose-certs}}"

complete=1
[ -f "$DIR/ca.pem" ] || complete=0
for n in "${NODES[@]}"; do
  [ -f "$DIR/$n/$n.pem" ] && [ -f "$DIR/$n/$n.key" ] && [ -f "$DIR/$n/ca.pem" ] || complete=0
done
if [ "$FORCE" = 0 ] && [ "$complete" = 1 ]; then
  echo "certificates already in $DIR (--force to replace them)"
  exit 0
fi
if [ "$complete" = 0 ] && [ -f "$DIR/n1.pem" ]; then
  echo "note: $DIR holds certificates in the former layout (every key in one folder, mounted" \
       "into every node); writing the per-node layout" >&2
fi
docker image inspect "$IMAGE" >/dev/null 2>&1 || {
  echo "error: image $IMAGE not found; build it first with scripts/build-image.sh" >&2; exit 1; }

mkdir -p "$DIR"
rm -f "$DIR"/*.pem "$DIR"/*.key
for n in "${NODES[@]}"; do
  mkdir -p "$DIR/$n"
  rm -f "$DIR/$n"/*.pem "$DIR/$n"/*.key
done
# Writable by the container's user for the time of the run only; afterwards the folders are
# the host user's (so that they can be removed) and the keys inside are 0600, uid 65532's.
folders=("$DIR")
for n in "${NODES[@]}"; do folders+=("$DIR/$n"); done
chmod 0777 "${folders[@]}"
trap 'chmod 0755 "${folders[@]}"' EXIT

names=()
if [ "$HOST_NAMES" = 1 ]; then names=(--extra-names localhost,127.0.0.1); fi
nodes_csv=$(IFS=,; echo "${NODES[*]}")
docker run --rm --network none -v "$(cd "$DIR" && pwd):/certs" "$IMAGE" \
  certs --out /certs --nodes "$nodes_csv" --per-node-dirs ${names[@]+"${names[@]}"}
echo "CA: $DIR/ca.pem (verify the nodes with it); node keys are readable by uid 65532 only," \
     "each in its node's folder ($DIR/n1 ...)"

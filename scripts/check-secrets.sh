#!/usr/bin/env bash
# Fail when a tracked file holds a secret: a private key, a generated credential file, a
# committed keyring or token. Run by scripts/test.sh (so by CI) before anything else; runnable on
# its own. Tests and examples make their secrets at run time; none is ever committed.
#
# What counts (each a rule a reviewer would apply by eye):
#   - a PEM private key block ("BEGIN ... PRIVATE KEY");
#   - a file messagefoundry writes with a generated password (bootstrap-admin*.txt);
#   - key or certificate stores by name (*.key, *.p12, *.pfx, *.jks);
#   - a raftlane keyring value (RAFTLANE_KEYRING=<id>:<32 bytes of base64>);
#   - an admin or API token in raftlane's own format (rl_ followed by 24+ hex digits);
#   - a password given as a literal: "password: <value>" ending its line, or
#     password = "<value>" (8+ characters) outside Rust source (Rust code names passwords only
#     as fields and parameters; a keyword argument naming a variable is not a literal).
set -euo pipefail
cd "$(dirname "$0")/.."
found=0
# Report where, never what: the value itself must not reach a CI log.
report() { echo "check-secrets: $1" >&2; found=1; }
where() { cut -d: -f1,2; }

while IFS= read -r f; do
  report "$f: a key or credential file must not be committed"
done < <(git ls-files | grep -E '(^|/)bootstrap-admin[^/]*\.txt$|\.(key|p12|pfx|jks)$' || true)

while IFS= read -r hit; do
  report "$hit: a private key"
done < <(git grep -nE -e '-----BEGIN [A-Z ]*PRIVATE KEY-----' -- ':!scripts/check-secrets.sh' | where || true)

while IFS= read -r hit; do
  report "$hit: a keyring value"
done < <(git grep -nE 'RAFTLANE_KEYRING=[A-Za-z0-9_.-]+:[A-Za-z0-9+/]{43}=' -- ':!scripts/check-secrets.sh' | where || true)

while IFS= read -r hit; do
  report "$hit: a raftlane token"
done < <(git grep -nE '\brl_[a-z]*_?[0-9a-f]{24,}\b' -- ':!scripts/check-secrets.sh' ':!Cargo.lock' | where || true)

while IFS= read -r hit; do
  report "$hit: a password value"
done < <(git grep -niE '^[^#/]*\bpass(word|wd)\s*[:=]\s*(["'"'"'][^"'"'"']{8,}["'"'"']|[A-Za-z0-9_+/.-]{8,}\s*$)' \
  -- ':!*.rs' ':!Cargo.lock' ':!scripts/check-secrets.sh' | where || true)

if [ "$found" -ne 0 ]; then
  echo "check-secrets: remove the secrets above (and rotate them); tests make theirs at run time" >&2
  exit 1
fi
echo "check-secrets: no committed secrets"

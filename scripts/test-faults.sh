#!/usr/bin/env bash
# `npm run test:faults`: the failure drills (test/faults/*.fault.ts), one after another, on one three-broker
# embedded Kafka (replication 3, min.insync.replicas 2) started by test/faults/setup.ts. Each drill prints its
# figures; a table of all of them follows the run. See docs/faults.md.
#
#   npm run test:faults                                       every drill
#   npm run test:faults -- test/faults/sink-flap.fault.ts     one
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$SHOAL_ROOT"
bash scripts/setup-test.sh
source scripts/env.sh

if [ "$#" -eq 0 ]; then
  set -- 'test/faults/*.fault.ts'
fi
figures="$(mktemp "${TMPDIR:-/tmp}/shoal-faults-XXXXXX")"
trap 'rm -f "$figures"' EXIT
export SHOAL_FAULTS_FIGURES="$figures"
started=$SECONDS
status=0
# One drill at a time: a broker kill or a cut must be the only fault in the air, and the figures each drill's own.
node --test \
  --test-reporter=spec \
  --test-concurrency=1 \
  --test-timeout="${SHOAL_FAULTS_TIMEOUT_MS:-300000}" \
  --test-global-setup=test/faults/setup.ts \
  "$@" || status=$?

printf '\nFailure drills (%ss, exit %s):\n' "$((SECONDS - started))" "$status"
node -e '
const lines = require("node:fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map(l => JSON.parse(l))
const cols = ["drill", "produced", "delivered", "deadLettered", "dropped", "lost", "duplicated", "late"]
const head = ["drill", "produced", "delivered", "dead-lettered", "dropped", "lost", "duplicated", "late"]
const rows = [head, ...lines.map(f => cols.map(c => String(f[c] ?? "-")))]
const width = head.map((_, i) => Math.max(...rows.map(r => r[i].length)))
for (const r of rows) console.log(r.map((v, i) => (i === 0 ? v.padEnd(width[i]) : v.padStart(width[i]))).join("  "))
' "$figures"
exit "$status"

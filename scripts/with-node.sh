#!/usr/bin/env bash
# Every npm script that runs Node.js goes through here (`bash scripts/with-node.sh node bench/x.ts`, `… tsc -p …`):
# it prepares the checkout (scripts/setup.sh: Node.js >= 22.22, the npm dependencies, Kafka's jars; quick when
# done) and runs the command with that Node.js first on PATH. The machine's own `node` may be older, and an older
# one cannot run the .ts files.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bash "$SHOAL_ROOT/scripts/setup.sh" >&2
source "$SHOAL_ROOT/scripts/env.sh"
exec "$@"

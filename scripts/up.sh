#!/usr/bin/env bash
# `npm run up`: prepares the checkout (scripts/setup.sh: Node.js, npm dependencies, Kafka's jars) and runs
# `shoal up` with the arguments given (`npm run up -- --port 9000`).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$SHOAL_ROOT"
bash scripts/setup.sh
source scripts/env.sh
exec node bin/shoal.js up "$@"

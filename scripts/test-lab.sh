#!/usr/bin/env bash
# `npm run test:lab`: the network lab's drills (test/lab/*.lab.ts). Makes a lab of network namespaces on one
# bridge (hosts in three zones: three brokers, three controllers, four dispatchers and a sink host), runs every
# drill inside it, prints their figures and removes the lab. Needs root, iproute2 and nftables; see
# docs/faults.md, "Across hosts: the network lab".
#
#   npm run test:lab                                      every drill
#   npm run test:lab -- test/lab/zone-cut.lab.ts          one
#   SHOAL_LAB_IF_SUPPORTED=1 npm run test:lab             a machine that cannot make the lab skips (one line, exit 0)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$SHOAL_ROOT"
bash scripts/setup-test.sh
source scripts/env.sh
exec node test/lab/run.ts "$@"

#!/usr/bin/env bash
# docs/colocation.md is what scripts/colocation_report.py makes from the committed runs: the page
# is regenerated here, from the inputs its results folder names, and compared (the plots are
# only checked to exist). Regenerating the page from other runs means updating this list.
set -euo pipefail
root=$1
cd "$root"
if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  echo "matplotlib missing: report not checked"
  exit 0
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The co-location run (visit 3 of the chained-requests folder) and the process mechanisms (visit
# 3 of the stall folder: plain kernels in two processes, which the scheduler's changes since do
# not touch).
G=results/2026-11-28-chained-requests
P=results/2026-11-28-colocation-stall
R=results/2026-11-27-out-of-line
S=results/2026-11-27-steal-scan
F=results/2026-11-27-fresh-offer
L=results/2026-11-27-colocation-loads
N=results/2026-11-29-runs-per-kernel
W=results/2026-11-29-work-stealing-runs
V=results/2026-11-29-half-device-stall
J=results/2026-11-29-join-ids-by-sm
C=results/2026-11-29-colocate-config-run/parts
/usr/bin/python3 scripts/colocation_report.py "$G/visit-3/colocate.json.gz" "$P/visit-3/processes.json.gz" \
  --bench "$S/visit-w4/colocate-new" "$S/visit-w5/colocate-new" "$S/visit-w7/colocate" \
  "$S/visit-w8/colocate" "$R/visit-4/graph" "$R/visit-5/lsssp" "$F/visit-J/rmat-final" \
  "$L/visit-1/out-1" "$L/visit-3/out-2" "$L/visit-2/out-3" \
  "$N/rmat/bench" "$N/rmat-loads/bench" "$N/road/bench" "$N/road-loads/bench" \
  "$N/lsssp/bench" "$N/lsssp-loads/bench" \
  "$W/visit-2/octree/bench" "$W/visit-2/octree-loads/bench" "$W/visit-2/game/bench" \
  "$W/visit-2/game-loads/bench" "$V/visit-1/bench" "$V/visit-4/fixed" "$C/part-0" "$C/part-1" \
  --mixed "$J/visit-2/packed.json.gz" "$J/visit-6/packed-loads.json.gz" \
  --mixed-in-order "$J/visit-2/join-in-order.json.gz" "$J/visit-6/join-in-order-loads.json.gz" \
  --commit 1e96df8 --results "$G" --md "$dir/docs/colocation.md" --plots "$dir/docs/colocation" > /dev/null
diff -u docs/colocation.md "$dir/docs/colocation.md" || {
  echo "docs/colocation.md differs from what scripts/colocation_report.py makes of its inputs"
  exit 1
}
ls "$dir"/docs/colocation/pareto-30.png "$dir"/docs/colocation/apps-*.png > /dev/null
echo "colocation report ok"

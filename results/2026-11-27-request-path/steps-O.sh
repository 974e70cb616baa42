#!/usr/bin/env bash
# Visit O, a diagnostic: where a yielding app's gathers wait, stage by stage. Binary: diag (the
# landed tree built with COOP_DIAG_STAMPS: device stamps of the first workgroup that sees a kill
# request and of each commit, logged by the host with its own clock). A periodic task's gathers,
# yielding form, 40 periods a unit: the R-MAT pairs, then two pairs whose gathers are short.
# Also (diag only): the phased loop's grain and offer interval from COOP_DIAG_GRAIN_MUL and
# COOP_DIAG_INTERVAL_NS.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vO
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
for c in gather-yield-rmat-40 gather-yield-contrast-40; do
  mkdir -p "$w/stamps-$c"
  COOP_DIAG_DIR=$w/stamps-$c timeout 100 diag/coop bench --config $c.json --out "$w/$c" --unit-timeout 45 > "$w/$c.log" 2>&1
  echo "$c rc $? at $SECONDS s" >> "$w/rc.txt"
done
# Colour and mis, yielding form: is their cost per chunk (grain x1 / x4 / x16 / x64 items per
# thread) or per offer (interval 4 us, or 1 s: claims then double without bound)?
for v in "1 4000" "4 4000" "16 4000" "64 4000" "1 1000000000"; do
  set -- $v
  COOP_DIAG_GRAIN_MUL=$1 COOP_DIAG_INTERVAL_NS=$2 timeout 60 diag/coop bench --config overhead-yield-sweeps.json --out "$w/sweep-g$1-i$2" --unit-timeout 30 > "$w/sweep-g$1-i$2.log" 2>&1
  echo "sweep $v rc $? at $SECONDS s" >> "$w/rc.txt"
done
find "$w" -name results.json -delete
cd "$OUT" && tar czf vO.tgz vO && rm -rf vO && echo done

#!/usr/bin/env bash
# Visit 5: the apps as long backgrounds on today's CLI (the kit's coop: the out-of-line
# protocol, after 624d5c1): l-sssp on the 24 M-vertex road graph beside
# requests at 30 % load (colocate-lsssp.json), docs/colocation.md's apps part.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/v5
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
timeout $((580 - SECONDS)) ./coop bench --config "$here/colocate-lsssp.json" --out "$w/lsssp" --unit-timeout 120 > "$w/lsssp.log" 2>&1
echo "lsssp rc $? at $SECONDS s" >> "$w/rc.txt"
cd "$OUT" && tar czf v5.tgz v5 && rm -rf v5 && echo done

#!/usr/bin/env bash
# Visit H: colour and mis gathers in the yielding form, final/ and base/ alternating five
# times each, counting the gathers over 0.9 ms (visit G saw such in final's runs).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vH
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"; date -u >> "$w/device.txt"; uptime >> "$w/device.txt"
for i in 1 2 3 4 5; do
  for b in final base; do
    timeout 60 $b/coop bench --config gather-yield-colour-40.json --out "$w/colour-$b-$i" --unit-timeout 30 > "$w/colour-$b-$i.log" 2>&1
    echo "colour-$b-$i rc $? at $SECONDS s $(cut -d' ' -f1-3 /proc/loadavg)" >> "$w/rc.txt"
  done
done
find "$w" -name results.json -delete
cd "$OUT" && tar czf vH.tgz vH && rm -rf vH && echo done

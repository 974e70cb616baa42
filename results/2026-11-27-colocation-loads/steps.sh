#!/usr/bin/env bash
# The apps as long backgrounds at 10 % and 60 % request load (configurations 1 and 2), and bfs on
# the road graph at 30 % (configuration 3):
# one coop bench folder per configuration, kept on the machine between calls (resumable), a
# copy into $OUT after each. usage: steps.sh 1|2|3 [MINUTES]  (the second call of one configuration continues its folder)
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib
n=$1
minutes=${2:-8.5}
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; date -u; } > "$OUT/device-$n.txt"
./coop bench --config "$here/colocate-loads-$n.json" --out "$here/out-$n" $( [ "$n" = 3 ] || echo --exclude load=0.3 ) \
  --max-minutes "$minutes" --unit-timeout 90 > "$here/run-$n.log" 2>&1
echo "rc $? at $SECONDS s" >> "$here/run-$n.log"
tail -40 "$here/run-$n.log"
cp "$here/run-$n.log" "$OUT/"
cd "$here" && tar czf "$OUT/out-$n.tgz" "out-$n"

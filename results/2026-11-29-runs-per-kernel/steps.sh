#!/usr/bin/env bash
# One visit, run from the unpacked kit (the tree's coop and test_apps_gpu, stripped, with
# libboost_context). Sections:
#   tests: test_apps_gpu (every app, adversarial schedules, runs per kernel), then coop run with
#          runs per kernel on R-MAT 22 in both persistent forms, validated;
#   rmat:  coop bench --config colocate on bfs/rmat24 at 30 % load: the requests alone, stream
#          priority, coop-whole, coop-whole-yield and green-64 (the app in launches of >= 2 s);
#   road:  the same on bfs/road-24m;
#   rmat-loads, road-loads: the same at 10 and 60 % load;
#   lsssp, lsssp-loads: the same for l-sssp on the road graph (colocate-lsssp.json), at 30 %, then
#          at 10 and 60 %.
# usage: steps.sh tests|rmat|road
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/$1
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
case $1 in
tests)
  timeout 240 ./test_apps_gpu > "$w/test_apps_gpu.log" 2>&1
  note test_apps_gpu $?
  grep -E "^\[  (PASSED|FAILED)" "$w/test_apps_gpu.log" >> "$w/rc.txt"
  for form in cooperative standalone; do
    for runs in 1 50; do
      timeout 120 ./coop run bfs --gen rmat22 --form $form --runs-per-kernel $runs --validate --json \
        > "$w/run-$form-$runs.json" 2> "$w/run-$form-$runs.err"
      note "run $form x$runs" $?
    done
  done
  ;;
rmat|road|rmat-loads|road-loads|lsssp|lsssp-loads)
  # colocate.json: the built-in colocate configuration (coop bench --print-config --config
  # colocate) with only the mechanisms named above, at 30 % load.
  config=colocate.json
  case $1 in lsssp*) config=colocate-lsssp.json ;; esac
  case $1 in
  *-loads)
    python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["colocate"]["loads"] = [0.1, 0.6]; json.dump(c, open("loads.json", "w"))' $config
    config=loads.json ;;
  esac
  pair=$(case $1 in rmat*) echo bfs/rmat24 ;; road*) echo bfs/road-24m ;; *) echo l-sssp/road-24m ;; esac)
  timeout 560 ./coop bench --config $config --out "$w/bench" --filter $pair > "$w/bench.log" 2>&1
  note bench $?
  ;;
esac

#!/usr/bin/env bash
# One visit, run from the unpacked kit (the tree's coop and test_apps_gpu, stripped, with
# libboost_context). Sections:
#   tests:       test_apps_gpu (every app, adversarial schedules, runs per kernel), then coop run
#                octree (8 M particles) and game (depth 10) with and without runs per kernel, in
#                both persistent forms, validated;
#   octree:      coop bench --config colocate.json on octree/8m at 30 % load: the requests
#                alone, stream priority, coop-whole, coop-at-request and green-64 (the app in
#                launches of >= 2 s);
#   octree-loads: the same at 10 and 60 %;
#   game, game-loads: the same for game/10.
# usage: steps.sh tests|octree|octree-loads|game|game-loads
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
    for runs in 1 20; do
      timeout 120 ./coop run octree --particles 8388608 --form $form --runs-per-kernel $runs \
        --validate --json > "$w/octree-$form-$runs.json" 2> "$w/octree-$form-$runs.err"
      note "octree $form x$runs" $?
      timeout 120 ./coop run game --depth 10 --form $form --runs-per-kernel $((runs / 10 + 1)) \
        --validate --json > "$w/game-$form-$runs.json" 2> "$w/game-$form-$runs.err"
      note "game $form x$((runs / 10 + 1))" $?
    done
  done
  ;;
octree|octree-loads|game|game-loads)
  # colocate.json: the built-in colocate configuration (coop bench --print-config --config
  # colocate) with only the mechanisms named above, at 30 % load.
  config=colocate.json
  case $1 in
  *-loads)
    python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["colocate"]["loads"] = [0.1, 0.6]; json.dump(c, open("loads.json", "w"))' $config
    config=loads.json ;;
  esac
  pair=$(case $1 in octree*) echo octree/8m ;; *) echo game/10 ;; esac)
  timeout 580 ./coop bench --config $config --out "$w/bench" --filter $pair > "$w/bench.log" 2>&1
  note bench $?
  ;;
esac

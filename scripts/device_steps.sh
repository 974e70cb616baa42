#!/usr/bin/env bash
# Runs on the lent GPU machine, from build/kit (see scripts/device_kit.sh): each STEP under its
# own time limit, logs and JSON into one tarball $OUT/device.tgz (a visit returns only a few
# files), a summary line per step in it (name, exit code, seconds).
#
# usage: device_steps.sh STEP...    (BENCH_ARGS="..." for the bench step; STEPS_BUDGET=seconds
#        for all steps together, default 570: a step's limit is cut to what is left, so that the
#        tarball is always written before the visit's own limit)
#   tests       every GPU test binary (300 s each)
#   runtime     the CUDA runtime tests (tasks beside jobs of 32 to 1024-thread blocks, cuBLAS)
#   shutdown    the cancellation/shutdown/fault tests
#   stress      coop stress (100,000 cycles, 10,000 tasks)
#   fuzz        coop fuzz-schedule: 10,000 seeds rotating + 1,000 seeds on every app
#   sanitize    compute-sanitizer memcheck/racecheck/synccheck (side by side) on every GPU test
#               binary (COOP_SANITIZER=1) and coop fuzz-schedule --shrink-only
#               (SAN_LIMIT seconds per run, default 150; SAN_BUDGET for the step, default 300;
#               SAN_SEEDS, default 8; SAN_TOOLS and SAN_TARGETS pick a subset; SAN_SHARDS
#               splits each test binary over that many processes)
#   probe       coop_probe_residency: which kernels can use a slot a persistent grid frees
#   consumer    the installed-package CUDA consumer (examples/cuda_consumer) on the GPU
#   demo        coop demo (the README's main job) and coop run of every app, validated
#   micro       coop_bench_gpu: gather, barrier vs grid.sync, idle offer_kill, task latency
#   colocate    coop_bench_colocate in one process and between processes (time slicing, MPS):
#               the JSON that scripts/colocation_report.py turns into docs/colocation.md
#   bench       coop bench --out bench $BENCH_ARGS (continue a paper run; the folder is tarred)
set -uo pipefail
cd "$(dirname "$0")" || exit 1
: "${OUT:?set OUT to the folder that comes back}"
logs=$OUT/logs
mkdir -p "$logs"
export COOP_TEST_DATA_DIR=$PWD/data  # the apps tests' graphs
export LD_LIBRARY_PATH=$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}  # Boost.Context (device_kit.sh)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$logs/device.txt" 2>&1
step() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS left=$((${STEPS_BUDGET:-570} - SECONDS))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -le 0 ]; then echo "$name skipped: no time left" >> "$logs/summary.txt"; return; fi
  timeout "$limit" "$@" > "$logs/$name.log" 2>&1
  echo "$name rc=$? $((SECONDS - t0))s" >> "$logs/summary.txt"
}
for s in "$@"; do
  case $s in
    tests)
      for t in ./test_*; do step "$(basename "$t")" 300 "$t"; done ;;
    runtime)
      step runtime 120 ./test_cuda_runtime
      step runtime-control-copies 120 env COOP_CUDA_CONTROL_COPIES=1 ./test_cuda_runtime ;;
    shutdown) step shutdown 120 ./test_shutdown_gpu ;;
    probe) step probe 120 ./coop_probe_residency --json "$logs/probe.json" ;;
    consumer) step consumer 60 ./cuda_consumer ;;
    demo)
      step demo 60 ./coop demo
      for app in bfs l-sssp p-sssp color mis bc; do
        step "run-$app" 60 ./coop run "$app" --graph data/rome99.gr --validate --json
      done
      step run-octree 60 ./coop run octree --validate --json
      step run-game 60 ./coop run game --validate --json ;;
    micro) step micro 240 ./coop_bench_gpu --json "$logs/micro.json" ;;
    colocate)
      step colocate 260 ./coop_bench_colocate --seconds 2 --json "$logs/colocate.json"
      step colocate-processes 150 ./coop_bench_colocate --only processes --seconds 2 \
        --json "$logs/processes.json" ;;
    stress) step stress 300 ./coop stress --backend cuda --json-file "$logs/stress.json" ;;
    fuzz)
      step fuzz-rotate 240 ./coop fuzz-schedule --backend cuda --seeds 10000 --rotate --keep-going
      step fuzz-all 240 ./coop fuzz-schedule --backend cuda --seeds 1000 --first 10001 --keep-going ;;
    sanitize)
      # compute-sanitizer runs one kernel at a time: COOP_SANITIZER (the tool's name) makes the
      # tests that need two grids at once skip, the adversarial schedules shrink-only, the
      # longest tests smaller, smaller again under racecheck (tests/backend.hpp). Every
      # (tool, target) pair runs side by side; GTEST_FILTER, when set, picks tests.
      export COOP_TEST_SEEDS=${SAN_SEEDS:-8}
      # this step's own budget (SAN_BUDGET seconds), within the visit's
      saved_budget=${STEPS_BUDGET:-570}
      until=$((SECONDS + ${SAN_BUDGET:-300}))
      [ "$until" -lt "$saved_budget" ] && STEPS_BUDGET=$until
      for tool in ${SAN_TOOLS:-memcheck racecheck synccheck}; do
        extra=""
        [ "$tool" = memcheck ] && extra="--leak-check full"
        for t in ${SAN_TARGETS:-./test_device_protocol ./test_semantics_gpu fuzz ./test_shutdown_gpu \
          ./test_examples_gpu ./test_cuda_runtime ./test_apps_gpu ./test_interruptible_gpu}; do
          if [ "$t" = fuzz ]; then
            # shellcheck disable=SC2086
            step "$tool-fuzz" "${SAN_LIMIT:-150}" compute-sanitizer --tool "$tool" $extra \
              --error-exitcode 9 ./coop fuzz-schedule --backend cuda --shrink-only \
              --seeds "${SAN_SEEDS:-8}" --keep-going &
            continue
          fi
          # SAN_SHARDS > 1 splits a test binary's tests over that many processes (gtest shards)
          shards=${SAN_SHARDS:-1}
          for ((i = 0; i < shards; ++i)); do
            name="$tool-${t#./}"
            [ "$shards" -gt 1 ] && name="$name-shard$i"
            # shellcheck disable=SC2086
            step "$name" "${SAN_LIMIT:-150}" env COOP_SANITIZER="$tool" GTEST_TOTAL_SHARDS="$shards" \
              GTEST_SHARD_INDEX="$i" compute-sanitizer --tool "$tool" $extra --error-exitcode 9 "$t" &
          done
        done
      done
      wait
      STEPS_BUDGET=$saved_budget
      unset COOP_TEST_SEEDS ;;
    bench)
      # shellcheck disable=SC2086
      step bench 560 ./coop bench --out bench ${BENCH_ARGS:-} ;;
    *) echo "unknown step $s" >> "$logs/summary.txt" ;;
  esac
done
[ -d bench ] && tar czf "$OUT/bench.tgz" bench
tar czf "$OUT/device.tgz" -C "$OUT" logs && rm -rf "$logs"

#!/usr/bin/env bash
# One visit to a machine with two H200s, from the unpacked kit (scripts/device_kit.sh, this
# file copied in, earlier visits' part folders in ./parts): part 0 of `coop bench --config
# colocate --shard I/2` on GPU 1 for the whole visit; on GPU 0 the sanitizers, then part 1 when
# time is left. Each part resumes its folder; the call's limit is 600 s. Each side has its own
# half of the cores, so that the sanitizers' processes do not slow part 0's host side.
#   steps.sh all    visit 1: device_steps.sh sanitize (every GPU test binary and the apps'
#                   schedule fuzzing, each under memcheck, racecheck and synccheck), and the
#                   fuzzing under racecheck with ids by SM
#   steps.sh apps   visit 2: the fuzzing under racecheck in both id orders (and with the -lineinfo
#                   build in ./race when it is there), and test_apps_gpu under the three tools
#                   split over 8 gtest shards (it ran past 150 s in visit 1)
#   steps.sh parts  visits 3-6: both parts from the start (PART_SECONDS); with RETRY=1 units
#                   recorded as failed run again (--retry-failed: MPS beside --shard, fixed
#                   after visit 2)
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
mkdir -p parts "$OUT/logs"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv; date -u; } > "$OUT/logs/device.txt"
limit=${PART_SECONDS:-545}
half=$(( $(nproc) / 2 ))
low="0-$(( half - 1 ))" high="$half-$(( 2 * half - 1 ))"
part() {  # gpu index seconds cores
  local g=$1 i=$2 s=$3 cores=$4 m
  # start no unit in the last ~2 minutes (a unit takes up to a minute, a new form's alone run
  # more); a unit cut by the timeout runs again next time
  m=$(awk -v s="$s" 'BEGIN { m = (s - 110) / 60; print (m < 0.01 ? 0.01 : m) }')
  CUDA_VISIBLE_DEVICES=$g timeout "$s" taskset -c "$cores" ./coop bench --config colocate \
    --shard "$i/2" --out "parts/part-$i" --max-minutes "$m" ${RETRY:+--retry-failed} \
    > "$OUT/logs/part-$i.log" 2>&1
  echo "part $i on GPU $g rc $? at $SECONDS s" >> "$OUT/logs/summary.txt"
}
racecheck_fuzz() {  # name binary [env...]
  local name=$1 bin=$2
  shift 2
  env CUDA_VISIBLE_DEVICES=0 "$@" timeout 250 taskset -c "$low" compute-sanitizer \
    --tool racecheck --error-exitcode 9 "$bin" fuzz-schedule --backend cuda --shrink-only \
    --seeds 8 --keep-going > "$OUT/logs/$name.log" 2>&1
  echo "$name rc $? at $SECONDS s" >> "$OUT/logs/summary.txt"
}
part 1 0 "$limit" "$high" &
gpu0=()  # GPU 0's background runs
case ${1:-all} in
all)
  racecheck_fuzz racecheck-fuzz-ids-by-sm ./coop COOP_CUDA_IDS_BY_SM=1 &
  gpu0+=($!)
  CUDA_VISIBLE_DEVICES=0 SAN_BUDGET=300 STEPS_BUDGET=320 OUT=$OUT/san \
    taskset -c "$low" bash device_steps.sh sanitize
  ;;
apps)
  racecheck_fuzz racecheck-fuzz ./coop &
  gpu0+=($!)
  racecheck_fuzz racecheck-fuzz-ids-by-sm ./coop COOP_CUDA_IDS_BY_SM=1 &
  gpu0+=($!)
  if [ -x race/coop ]; then
    racecheck_fuzz racecheck-fuzz-lineinfo race/coop &
    gpu0+=($!)
  fi
  CUDA_VISIBLE_DEVICES=0 SAN_TARGETS=./test_apps_gpu SAN_SHARDS=8 SAN_LIMIT=450 SAN_BUDGET=460 \
    STEPS_BUDGET=470 OUT=$OUT/san taskset -c "$low" bash device_steps.sh sanitize
  ;;
parts) ;;
esac
for j in "${gpu0[@]}"; do wait "$j"; done
left=$(( limit - SECONDS ))
[ "$left" -gt 150 ] && part 0 1 "$left" "$low" &
wait
# What comes back: each part's run.json and units.jsonl, gzipped, one file each (a file over
# 16 MiB does not come back: visit 6's one tarball of the parts did not). coop bench rewrites
# results.json and the CSV from them when it resumes; the report reads the folder.
for p in parts/part-*; do
  n=$(basename "$p")
  cp "$p/run.json" "$OUT/$n-run.json"
  gzip -c "$p/units.jsonl" > "$OUT/$n-units.jsonl.gz"
  [ "$(stat -c %s "$OUT/$n-units.jsonl.gz")" -lt $((16 << 20)) ] || echo "$n: units.jsonl.gz over 16 MiB: split it" >> "$OUT/logs/summary.txt"
done
if [ -d "$OUT/san" ]; then tar czf "$OUT/san.tgz" -C "$OUT" san && rm -rf "$OUT/san"; fi

#!/usr/bin/env bash
# `coop bench` from the command line: a run stopped by --max-minutes resumes where it stopped,
# a finished folder runs nothing again, --shard splits the plan into parts, and the report
# script turns it into plots and markdown.
# usage: bench_cli.sh COOP CONFIG REPORT_SCRIPT
set -euo pipefail
coop=$1 config=$2 report=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
set +e
"$coop" bench --backend cpu --config "$config" --out "$dir/r" --max-minutes 0.00001 > "$dir/1.log" 2>&1
rc=$?
set -e
[ $rc -eq 3 ] || { cat "$dir/1.log"; echo "expected exit 3 after --max-minutes, got $rc"; exit 1; }
grep -q "units left: run the same command again" "$dir/1.log"
[ "$(wc -l < "$dir/r/units.jsonl")" -eq 1 ] || { echo "expected one finished unit"; exit 1; }
"$coop" bench --backend cpu --config "$config" --out "$dir/r" > "$dir/2.log" 2>&1
grep -q "5 units, 1 already in" "$dir/2.log" || { cat "$dir/2.log"; exit 1; }
[ "$(wc -l < "$dir/r/units.jsonl")" -eq 5 ]
"$coop" bench --backend cpu --config "$config" --out "$dir/r" > "$dir/3.log" 2>&1
grep -q "5 units, 5 already in" "$dir/3.log" || { cat "$dir/3.log"; exit 1; }
for f in results.json overhead.csv multitasking.csv; do [ -s "$dir/r/$f" ]; done
# Another configuration into the same folder is refused, and nothing is lost.
if "$coop" bench --backend cpu --config quick --out "$dir/r" > "$dir/4.log" 2>&1; then
  echo "a folder of another configuration was reused"; exit 1
fi
grep -q "another config" "$dir/4.log"
[ "$(wc -l < "$dir/r/units.jsonl")" -eq 5 ]
# A unit that overruns --unit-timeout is recorded as failed and stops the run (exit 4); a rerun
# skips it, --retry-failed runs it again.
set +e
"$coop" bench --backend cpu --config "$config" --out "$dir/t" --unit-timeout 0.001 > "$dir/5.log" 2>&1
rc=$?
set -e
[ $rc -eq 4 ] || { cat "$dir/5.log"; echo "expected exit 4 after --unit-timeout, got $rc"; exit 1; }
grep -q '"timed_out":true' "$dir/t/units.jsonl"
"$coop" bench --backend cpu --config "$config" --out "$dir/t" > "$dir/6.log" 2>&1
grep -q "5 units, 1 already in" "$dir/6.log" || { cat "$dir/6.log"; exit 1; }
"$coop" bench --backend cpu --config "$config" --out "$dir/t" --retry-failed > "$dir/7.log" 2>&1
grep -q "5 units, 4 already in" "$dir/7.log" || { cat "$dir/7.log"; exit 1; }
if grep -q '"error"' "$dir/t/results.json"; then echo "the retried unit still failed"; exit 1; fi
# --shard I/N: the parts together list every unit once; a part outside N is a usage error.
"$coop" bench --backend cpu --config colocate --list | grep / | sort > "$dir/all.txt"
for i in 0 1 2; do "$coop" bench --backend cpu --config colocate --list --shard $i/3 | grep /; done |
  sort > "$dir/parts.txt"
cmp "$dir/all.txt" "$dir/parts.txt" || { echo "the parts of --shard are not the plan"; exit 1; }
set +e
"$coop" bench --backend cpu --config "$config" --shard 3/3 > "$dir/8.log" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] || { cat "$dir/8.log"; echo "expected exit 2 for --shard 3/3, got $rc"; exit 1; }
grep -q "0 <= I < N" "$dir/8.log"
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  /usr/bin/python3 "$report" "$dir/r" --plots "$dir/md/results" --md "$dir/md/results.md"
  grep -q "Table 2" "$dir/md/results.md"
  grep -q "Fig. 6" "$dir/md/results.md"
  ls "$dir/md/results/"*.png > /dev/null
else
  echo "matplotlib missing: report not checked"
fi
echo "bench CLI ok"

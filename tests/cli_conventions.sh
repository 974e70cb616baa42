#!/usr/bin/env bash
# The coop command's conventions (docs/cli.md): --version, one exit-code scheme (2 and a
# "coop: " message for every usage error, whatever parsed it), --json as one JSON document on
# stdout, options checked before any work, the OS's reason for an unwritable output, and a clean
# error for a task larger than the device.
# usage: cli_conventions.sh COOP BENCH_CONFIG
set -uo pipefail
coop=$1 config=$2
py=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect RC NEEDLE ARGS...: runs coop ARGS (at most 120 s), checks its exit code and that stderr
# contains NEEDLE.
expect() {
  local want=$1 needle=$2
  shift 2
  timeout 120 "$coop" "$@" > "$dir/out" 2> "$dir/err"
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    fail "coop $*: exit $rc, expected $want"; cat "$dir/err"; return
  fi
  grep -qF -- "$needle" "$dir/err" || { fail "coop $*: stderr lacks '$needle'"; cat "$dir/err"; }
}

# --version: the project version and the commit.
out=$("$coop" --version) || fail "--version exited $?"
[[ $out =~ ^coop\ [0-9]+\.[0-9]+\.[0-9]+\ \(commit\ .+\)$ ]] || fail "--version printed '$out'"
"$coop" --help | grep -q "^Exit codes" || fail "--help does not list the exit codes"

# Usage errors: exit 2 with a "coop: " message, for CLI11's errors and coop's own checks alike.
for cmd in info demo "run bfs" bench fuzz-schedule stress; do
  # shellcheck disable=SC2086
  expect 2 "coop: " $cmd --no-such-option
done
expect 2 "coop: " run
expect 2 "coop: --policy" demo --policy nasty
expect 2 "coop: --barrier" run bfs --gen grid:4x4 --barrier sideways
expect 2 "coop: --backend" bench --backend gpu --list
expect 2 "coop: --apps" fuzz-schedule --apps bfs,nope
expect 2 "coop: --backend" stress --backend gpu
expect 2 "coop: --stall-seconds" stress --stall-seconds -1
expect 2 "coop: --gen" run bfs --gen grid:0x4
expect 2 "coop: --gen: graph spec 'rmat:40': R-MAT scale" run bfs --gen rmat:40
expect 2 "coop: --gen" run bfs --gen grid:100000x100000
expect 2 "coop: --graph" run bfs --graph "$dir/no-such-graph.gr"
expect 2 "coop: " run octree --gen grid:4x4
expect 2 "needs a seed" run bfs --gen grid:4x4 --policy adversarial
expect 2 "coop: --seeds" fuzz-schedule --seeds -3
expect 2 "coop: --threads" run bfs --gen usa-w --threads 100000
grep -q "vertices" "$dir/err" && fail "the graph was generated before --threads was checked"
expect 2 "coop: --threads" demo --threads 2048

# Checked before any work: the 6-million-vertex preset is never generated (its load line is
# printed once it is).
expect 2 "coop: --policy" run bfs --gen usa-w --policy nasty
grep -q "vertices" "$dir/err" && fail "the graph was generated before --policy was checked"
# An unwritable output fails first, with the OS's reason.
expect 2 "No such file or directory" run bfs --gen usa-w --output "$dir/no-such-dir/levels.txt"
grep -q "vertices" "$dir/err" && fail "the graph was generated before --output was opened"
expect 2 "No such file or directory" stress --backend cpu --json-file "$dir/no-such-dir/s.json"

# A task larger than the device: a clean usage error, no crash, no job left running. The demo's
# job keeps one slot, so a task of every slot, or a device of one, would wait forever.
expect 2 "coop: --task-groups 9" demo --backend cpu --slots 8 --task-groups 9
expect 2 "coop: --task-groups 8" demo --backend cpu --slots 8 --task-groups 8
expect 2 "coop: --slots 1" demo --backend cpu --slots 1

# A graph saved by coop run is read back by coop run and by coop bench (input file:PATH); a bad
# path or format is a usage error before any unit runs.
expect 0 "arcs" run bfs --gen grid:16x16 --backend cpu --save-graph "$dir/grid.coopcsr"
expect 0 "arcs" run bfs --graph "$dir/grid.coopcsr" --backend cpu --validate
grep -q "validation: ok" "$dir/out" || fail "run --graph of a saved graph: not validated"
expect 2 "coop: octree does not read a graph" run octree --save-graph "$dir/none.coopcsr"
expect 2 "must end in .coopcsr" run bfs --gen grid:4x4 --save-graph "$dir/grid.gr"
printf '{"name": "files", "pairs": [{"name": "bfs/saved", "app": "bfs", "input": "file:%s"}], "overhead": {"reps": 1}}' \
  "$dir/grid.coopcsr" > "$dir/files.json"
expect 0 "" bench --backend cpu --config "$dir/files.json" --out "$dir/files-bench"
grep -q '"input":"file:' "$dir/files-bench/units.jsonl" || fail "bench: the unit does not name its file"
sed 's#grid.coopcsr#missing.coopcsr#' "$dir/files.json" > "$dir/missing.json"
expect 2 "no graph file" bench --backend cpu --config "$dir/missing.json" --out "$dir/missing-bench"
sed "s#$dir/grid.coopcsr#$dir#" "$dir/files.json" > "$dir/folder.json"
expect 2 "is not a file" bench --backend cpu --config "$dir/folder.json" --list
: > "$dir/empty.gr"
sed 's#grid.coopcsr#empty.gr#' "$dir/files.json" > "$dir/empty.json"
expect 2 "is empty" bench --backend cpu --config "$dir/empty.json" --list
printf '{"name": "bad-spec", "pairs": [{"name": "a", "app": "bfs", "input": "rmat:40"}], "overhead": {"reps": 1}}' \
  > "$dir/bad-spec.json"
expect 2 "pair a: graph spec 'rmat:40'" bench --backend cpu --config "$dir/bad-spec.json" --list
# A selection that keeps no unit measures nothing: refused, not an empty success.
expect 2 "--list shows the units" bench --backend cpu --config "$dir/files.json" \
  --filter no-such-unit --out "$dir/none-bench"
expect 2 "coop: --seeds" fuzz-schedule --seeds 0

# An option that the app does not read is refused, not ignored.
expect 2 "coop: --source: color does not read it (only bfs, l-sssp, p-sssp)" \
  run color --gen grid:4x4 --source 5
expect 2 "coop: --depth: octree does not read it" run octree --depth 3
expect 2 "coop: --particles: bfs does not read it" run bfs --gen grid:4x4 --particles 9

# An output that is the input graph is refused before it is opened (opening would empty it), and
# so are two outputs to one file.
cp "$dir/grid.coopcsr" "$dir/keep.coopcsr"
expect 2 "that is the input graph" run bfs --graph "$dir/keep.coopcsr" --output "$dir/keep.coopcsr"
expect 2 "that is the input graph" run bfs --graph "$dir/keep.coopcsr" --save-graph "$dir/keep.coopcsr"
cmp -s "$dir/grid.coopcsr" "$dir/keep.coopcsr" || fail "run: an output over its --graph changed the graph"
expect 2 "that is the --save-graph file" run bfs --gen grid:4x4 --output "$dir/both.coopcsr" \
  --save-graph "$dir/./both.coopcsr"

# A malformed graph file is an unreadable input (2), named with its line and reason.
printf 'p sp 3 5\na 1 2 1\na 2 3 1\n' > "$dir/few-arcs.gr"
expect 2 "few-arcs.gr:3: the header announces 5 arcs but the file has 2" \
  run p-sssp --backend cpu --graph "$dir/few-arcs.gr"

# A misspelt field in a bench configuration is refused, not ignored for its default.
printf '{"name": "typo", "pairs": [{"name": "a", "app": "bfs", "input": "grid:3x3"}], "overhead": {"repz": 1}}' \
  > "$dir/typo.json"
expect 2 "overhead: unknown field 'repz'" bench --backend cpu --config "$dir/typo.json" --list

# Where bench cannot start (a results folder that is a file, a configuration that is a folder,
# a folder of another configuration): usage errors, before anything runs.
expect 2 "cannot make the results folder" bench --backend cpu --config "$dir/files.json" \
  --out "$dir/grid.coopcsr"
expect 2 "neither a built-in configuration" bench --backend cpu --config "$dir" --list
sed 's/"reps": 1/"reps": 2/' "$dir/files.json" > "$dir/files2.json"
expect 2 "holds results of another config" bench --backend cpu --config "$dir/files2.json" \
  --out "$dir/files-bench"

# stress with no kill/fork cycles and no tasks has nothing to report as grown.
timeout 120 "$coop" stress --backend cpu --cycles 0 --tasks 0 --churn-seconds 1 > "$dir/out" 2>&1 ||
  fail "stress with nothing to do: exit $?"
grep -q "stress: no problem" "$dir/out" || { fail "stress with nothing to do found a problem"; cat "$dir/out"; }

# --json: one JSON document on stdout, whatever the subcommand.
json_ok() {
  local what=$1
  shift
  timeout 200 "$coop" "$@" > "$dir/json" 2> "$dir/err"
  local rc=$?
  [ "$rc" -eq 0 ] || { fail "coop $what: exit $rc"; cat "$dir/err"; return; }
  "$py" -c 'import json,sys; json.load(sys.stdin)' < "$dir/json" || fail "coop $what: not JSON"
}
json_ok info info --json
json_ok "run --json" run bfs --gen grid:16x16 --backend cpu --validate --json
"$py" -c 'import json,sys; d=json.load(sys.stdin); assert d["input_source"]=="generated" and d["stand_in_for"] is None, d' < "$dir/json" || fail "run --json: the input is not labelled as generated"
json_ok "demo --json" demo --backend cpu --size 2000 --json
json_ok "bench --list --json" bench --backend cpu --config "$config" --list --json
"$py" -c 'import json,sys; d=json.load(sys.stdin); assert d["count"]==len(d["units"])>0, d' < "$dir/json" || fail "bench --list --json: no units"
json_ok "bench --print-config" bench --backend cpu --config "$config" --print-config
json_ok "fuzz-schedule --json" fuzz-schedule --backend cpu --seeds 1 --apps bfs,game --json
json_ok "stress --json" stress --backend cpu --cycles 10 --tasks 8 --churn-seconds 1 --json \
  --json-file "$dir/stress.json"
cmp -s <("$py" -c 'import json,sys; print(json.load(sys.stdin))' < "$dir/json") \
  <("$py" -c 'import json,sys; print(json.load(sys.stdin))' < "$dir/stress.json") ||
  fail "stress: --json and --json-file differ"

# The generator presets are listed, stand-ins labelled as such.
"$coop" run --help | grep -q "usa-ny: .*stand-in for DIMACS" || fail "run --help lists no presets"

[ "$fails" -eq 0 ] || { echo "$fails failures"; exit 1; }
echo "CLI conventions ok"

#!/usr/bin/env bash
# Visit M5: the process mechanisms on a small pair, then an MPS unit stopped by --unit-timeout:
# is its daemon gone, and do the orphaned children end by themselves?
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
cat > cfg.json <<'J'
{"name": "mps-check", "pairs": [{"name": "bfs/road", "app": "bfs", "input": "road:2000000"}],
 "colocate": {"pairs": "all", "loads": [0.3], "seconds": 2, "request": {"task": "cublas", "gpu_ms": 0.4},
 "mechanisms": [{"name": "mps-50", "background": "process", "mps_percent": 50},
                {"name": "time-slicing", "background": "process"}]}}
J
timeout 200 ./coop bench --config cfg.json --out $OUT/ok > $OUT/ok.log 2>&1; echo "ok rc $?"
echo "MPS processes after the run: $(pgrep -c -f nvidia-cuda-mps)"
timeout 100 ./coop bench --config cfg.json --out $OUT/to --unit-timeout 3 --filter mps > $OUT/to.log 2>&1; echo "timeout rc $?"
sleep 3; echo "MPS processes 3 s after the stopped run: $(pgrep -c -f nvidia-cuda-mps)"; pgrep -a -f nvidia-cuda-mps
echo "children 3 s after: $(pgrep -c -f 'coop bench-child')"
sleep 20; echo "children 23 s after: $(pgrep -c -f 'coop bench-child')"; pgrep -a -f 'coop bench-child'
ls -d /tmp/coop-* 2>/dev/null

#!/bin/bash
# The barrier's slow paths out of line (noinline members: a stack frame of 104-136 bytes)
# against the committed benchmark, alternating.
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH
for i in 1 2; do
  for b in new ool; do echo "== $b"; ./bench_$b --only barrier --reps 10 2>&1 | grep -v "^coop GPU"; done
done

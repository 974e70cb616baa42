#!/usr/bin/env bash
# Visit G: the Python package's GPU tests on the final code (the GEMM app included). The
# extension is relinked on the lent machine for its Python from the build's objects
# (scripts/device_kit.sh packs them under build/kit/python/objects), then pytest -m gpu.
set -u
mkdir -p /tmp/p && tar xJf build/kitP/py.tar.xz -C /tmp/p
{ nvidia-smi -L; date -u; } > $OUT/device.txt
(time bash scripts/python_module_relink.sh /tmp/p/python/objects /tmp/pyout) > $OUT/relink.log 2>&1
echo relink rc $? | tee -a $OUT/rc.txt
cp python/coop/__init__.py /tmp/pyout/coop/
PYTHONPATH=/tmp/pyout timeout 200 python3 -m pytest -q -p no:cacheprovider python/tests -m gpu > $OUT/pytest-gpu.log 2>&1
echo pytest rc $? | tee -a $OUT/rc.txt

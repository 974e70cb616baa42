"""The backends the tests run on: the CPU backend always; CUDA (marked gpu) where a device is.

`pytest -m "not gpu"` is the CPU suite (CI); `pytest -m gpu` runs the same tests on the GPU plus
the PyTorch interop and exits 77 (skipped, for ctest) where there is no device.
"""

import coop
import pytest


def cuda_devices():
    cuda = coop.info()["cuda"]
    return cuda["devices"] if cuda["built"] else []


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skipped without one)")


def pytest_collection_modifyitems(config, items):
    if cuda_devices():
        return
    skip = pytest.mark.skip(reason="no CUDA device (or coop built without the CUDA backend)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_sessionfinish(session, exitstatus):
    if session.config.getoption("-m") == "gpu" and not cuda_devices():
        session.exitstatus = 77


BACKENDS = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.fixture(params=BACKENDS)
def rt(request):
    """A runtime per test (8 workgroup slots on the CPU backend, the whole GPU on CUDA)."""
    runtime = coop.Runtime(backend=request.param, cpu_slots=8)
    yield runtime
    runtime.shutdown("cancel")

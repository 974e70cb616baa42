"""coop: cooperative kernels that share the GPU.

A Runtime owns the scheduler of one device (a GPU, or the CPU backend's virtual compute
units). launch_app() starts one of the paper's applications or an example kernel as a
cooperative job; tasks (rt.task(), rt.submit(), rt.run()) borrow workgroups from the running
jobs for latency-critical work, e.g. a PyTorch forward pass on
torch.cuda.ExternalStream(task.stream). See docs/python.md.
"""

import os as _os

# CUDA loads modules lazily by default, and a kernel loaded while a coop job's persistent kernel
# runs waits for that kernel: a second job (or the driver's own memset) started beside the first
# then never starts. A Python program starts jobs of several kernel types, so coop asks for eager
# loading unless the user chose otherwise. It takes effect only if nothing initialised CUDA in
# this process yet: import coop before using the GPU through another library.
_os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")

from ._coop import (  # noqa: E402,F401
    Error,
    GatherTimeout,
    Job,
    JobCancelled,
    MisuseError,
    Runtime,
    RuntimeClosed,
    Task,
    TaskHandle,
    TaskScope,
    __version__,
    info,
    launchable,
    parameters,
)

__all__ = [
    "Error",
    "GatherTimeout",
    "Job",
    "JobCancelled",
    "MisuseError",
    "Runtime",
    "RuntimeClosed",
    "Task",
    "TaskHandle",
    "TaskScope",
    "info",
    "launchable",
    "parameters",
]

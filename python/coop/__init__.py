"""coop: cooperative kernels that share the GPU.

A Runtime owns the scheduler of one device (a GPU, or the CPU backend's virtual compute
units). launch_app() starts one of the paper's applications or an example kernel as a
cooperative job; tasks (rt.task(), rt.submit(), rt.run()) borrow workgroups from the running
jobs for latency-critical work, e.g. a PyTorch forward pass on
torch.cuda.ExternalStream(task.stream). See docs/python.md.
"""

from ._coop import (  # noqa: F401
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

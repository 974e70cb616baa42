"""PyTorch work as coop tasks on the GPU: a model's forward pass on the task's stream beside a
cooperative job, checked against the same forward pass alone (skipped without torch or a GPU)."""

import coop
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu


@pytest.fixture
def model_and_input():
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.GELU(),
                                torch.nn.Linear(1024, 1024)).cuda().eval()
    x = torch.randn(256, 1024, device="cuda")
    with torch.no_grad():
        reference = model(x)  # alone, before any job runs (its kernels are loaded here)
    torch.cuda.synchronize()
    return model, x, reference


def forward_on(stream_handle, model, x):
    with torch.no_grad(), torch.cuda.stream(torch.cuda.ExternalStream(stream_handle)):
        return model(x)


def test_forward_pass_in_a_task_scope_beside_a_cooperative_job(model_and_input):
    model, x, reference = model_and_input
    rt = coop.Runtime(backend="cuda")
    job = rt.launch_app("gemm", m=2048, n=2048, k=512, passes=10**6)
    outputs = []
    for _ in range(20):
        with rt.task(fraction=1.0) as t:
            # (the job's M may still read above 1 here for up to one tile: workgroups forked
            # into a grant the task took back leave at their next offer; docs/python.md)
            outputs.append(forward_on(t.stream, model, x))
    records = rt.task_records()
    assert len(records) == 20 and all(r["end_ms"] >= r["start_ms"] for r in records)
    job.stop()
    job.wait()
    assert job.validate()["ok"], job.validate()["detail"]
    assert job.stats()["kills"] > 0 and job.stats()["forked_groups"] > 0
    for y in outputs:
        assert torch.allclose(y, reference, rtol=1e-5, atol=1e-5)


def test_submitted_forward_passes(model_and_input):
    model, x, reference = model_and_input
    rt = coop.Runtime(backend="cuda")
    job = rt.launch_app("gemm", m=2048, n=2048, k=512, passes=10**6)
    outputs = []

    def work(task):  # on a runtime thread, with the GIL
        outputs.append(forward_on(task.stream, model, x))

    handles = [rt.submit(work, fraction=1.0) for _ in range(10)]
    for h in handles:
        h.wait()
    job.stop()
    job.wait()
    assert job.validate()["ok"]
    assert len(outputs) == 10
    for y in outputs:
        assert torch.allclose(y, reference, rtol=1e-5, atol=1e-5)

#!/usr/bin/env python3
"""Latency-critical requests beside a long-running GPU computation, without and with coop.

The background is coop's persistent tiled matrix multiply ("gemm"). Requests arrive as a Poisson
stream (--load of the device's time, from the request's time alone) and are served in order;
a request's latency runs from its arrival to its result, queueing included.

  1. without coop: the plain persistent GEMM relaunched per product (what users run today) and
     each request on a high-priority stream -- it waits for the product in progress;
  2. with coop: the same GEMM as a cooperative job, each request a coop task holding the whole
     device (`with rt.task(fraction=1.0) as t`) and running on t.stream.

On a GPU the request is a PyTorch MLP's forward pass on torch.cuda.ExternalStream(t.stream); on
the CPU backend (or without PyTorch, --backend cpu) the same story at CPU scale with NumPy.
Every request's output is compared with the forward pass alone, and the background's product
with an independent reference. Prints p50/p99/max latency and the background's throughput side
by side; --json FILE writes them.

  PYTHONPATH=build/cuda/python python3 examples/python/colocate.py            # GPU if present
  PYTHONPATH=build/cpu/python python3 examples/python/colocate.py --backend cpu
"""

import argparse
import json
import math
import os
import random
import sys
import time

import coop
import numpy as np

try:
    import torch
except ImportError:  # the CPU story needs NumPy only
    torch = None


def percentile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(q / 100 * len(s)) - 1))]


class TorchRequest:
    """An MLP's forward pass (four 2048-wide linear layers and GELUs, batch 512, FP32)."""

    def __init__(self, width=2048, batch=512, layers=4):
        torch.manual_seed(0)
        blocks = []
        for _ in range(layers):
            blocks += [torch.nn.Linear(width, width), torch.nn.GELU()]
        self.model = torch.nn.Sequential(*blocks).cuda().eval()
        self.x = torch.randn(batch, width, device="cuda")
        self.priority_stream = torch.cuda.Stream(priority=-1)  # the highest priority
        # Each output is compared with the reference on the GPU, on the request's stream, and
        # the mismatches are counted there: reading a result on the host (or running anything
        # on the legacy default stream) would wait for the background.
        with torch.no_grad():
            self.reference = self.model(self.x)
        self.mismatches = torch.zeros((), dtype=torch.int64, device="cuda")
        self.run_on(self.priority_stream)  # load every kernel now: none may load beside a job
        torch.cuda.synchronize()
        self.mismatches.zero_()

    def run_on(self, stream):
        with torch.no_grad(), torch.cuda.stream(stream):
            y = self.model(self.x)
            self.mismatches += (~torch.isclose(y, self.reference, rtol=1e-5, atol=1e-5)).any()

    def alone(self):
        self.run_on(self.priority_stream)
        self.priority_stream.synchronize()

    def without_coop(self, rt):
        self.alone()

    def with_coop(self, rt):
        with rt.task(fraction=1.0) as t:  # the jobs give up their workgroups first
            self.run_on(torch.cuda.ExternalStream(t.stream))
        # leaving the task waited for its stream

    def wrong_outputs(self):
        torch.cuda.synchronize()
        n = int(self.mismatches)
        self.mismatches.zero_()
        return n


class NumpyRequest:
    """The same MLP at CPU scale, in NumPy (tanh for GELU)."""

    def __init__(self, width=256, batch=128, layers=4):
        rng = np.random.default_rng(0)
        self.w = [rng.standard_normal((width, width), dtype=np.float32) / np.sqrt(width)
                  for _ in range(layers)]
        self.x = rng.standard_normal((batch, width), dtype=np.float32)
        self.reference = self.forward()
        self.mismatches = 0

    def forward(self):
        y = self.x
        for w in self.w:
            y = np.tanh(y @ w)
        return y

    def alone(self):
        self.mismatches += not np.allclose(self.forward(), self.reference, rtol=1e-5, atol=1e-6)

    def without_coop(self, rt):
        self.alone()

    def with_coop(self, rt):
        with rt.task(fraction=1.0):
            self.alone()

    def wrong_outputs(self):
        n, self.mismatches = self.mismatches, 0
        return n


def serve(rt, request, half, seconds, load, alone_s, seed):
    """Poisson arrivals at `load` of the device's time; returns the latencies (s)."""
    rng = random.Random(seed)
    arrivals, t = [], rng.expovariate(load / alone_s)
    while t < seconds:
        arrivals.append(t)
        t += rng.expovariate(load / alone_s)
    latencies = []
    t0 = time.perf_counter()
    for arrival in arrivals:
        while time.perf_counter() - t0 < arrival:
            pass  # spin: sleeping would add the OS's wake-up to every latency
        (request.without_coop if half == "without coop" else request.with_coop)(rt)
        latencies.append(time.perf_counter() - t0 - arrival)
        if sys.stderr.isatty():  # a live line
            print(f"\r  {half:<13} {len(latencies):5d} requests, p50 so far "
                  f"{1e3 * percentile(latencies, 50):8.2f} ms", end="", file=sys.stderr, flush=True)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    return latencies


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--seconds", type=float, default=4.0, help="each half's request stream")
    ap.add_argument("--load", type=float, default=0.3, help="requests' share of the device's time")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", metavar="FILE", help="write the results as JSON")
    args = ap.parse_args()
    if not 0 < args.load < 1:
        ap.error("--load must be in (0, 1)")

    # CPU backend: one workgroup slot per core, as a GPU has its SMs (16 slots on 2 cores would
    # time-slice the background's threads and lengthen every tile).
    rt = coop.Runtime(backend=args.backend, cpu_slots=os.cpu_count() or 1)
    gpu = rt.backend == "cuda"
    if gpu and torch is None:
        sys.exit("colocate.py: the GPU requests are PyTorch's; install torch or use --backend cpu")
    request = TorchRequest() if gpu else NumpyRequest()
    shape = dict(m=8192, n=8192, k=2048) if gpu else dict(m=512, n=512, k=32)
    print(f"coop {coop.__version__} on {rt.device_name}; background GEMM "
          f"{shape['m']}x{shape['n']}x{shape['k']}", file=sys.stderr)

    print("the request alone", file=sys.stderr)
    # The request alone (warm first: kernels load before any persistent job runs).
    request.alone()
    alone = []
    for _ in range(30):
        t = time.perf_counter()
        request.alone()
        alone.append(time.perf_counter() - t)
    alone_s = percentile(alone, 50)
    if request.wrong_outputs():
        sys.exit("colocate.py: the request alone does not reproduce its own output")

    results = {"device": rt.device_name, "backend": rt.backend, "load": args.load,
               "seconds": args.seconds, "request_alone_ms": 1e3 * alone_s,
               "background": shape, "halves": {}}
    for half in ["without coop", "with coop"]:
        # without coop: on a GPU the plain persistent kernel relaunched per product (form
        # standalone); on the CPU backend the job on every slot, never giving one up (policy
        # fixed) -- relaunching would leave the CPU idle between products
        plain = {"form": "standalone"} if gpu else {"policy": "fixed"}
        background = rt.launch_app("gemm", passes=1 << 30, **shape,
                                   **(plain if half == "without coop" else {}))
        time.sleep(0.2)  # the background is running
        print(f"{half}: background running", file=sys.stderr)
        tiles0, t0 = background.stats()["tiles_done"], time.perf_counter()
        latencies = serve(rt, request, half, args.seconds, args.load, alone_s, args.seed)
        tiles_per_s = (background.stats()["tiles_done"] - tiles0) / (time.perf_counter() - t0)
        background.stop()
        background.wait()
        check = background.validate()
        wrong = request.wrong_outputs()
        results["halves"][half] = {
            "requests": len(latencies), "wrong_outputs": wrong,
            "p50_ms": 1e3 * percentile(latencies, 50), "p99_ms": 1e3 * percentile(latencies, 99),
            "max_ms": 1e3 * max(latencies), "background_tiles_per_s": tiles_per_s,
            "background_check": check}

    base = results["halves"]["without coop"]
    print(f"\nrequest alone: {results['request_alone_ms']:.2f} ms (p50); load {args.load:.0%}")
    print(f"{'':<14}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}{'background':>12}  checks")
    ok = True
    for half, r in results["halves"].items():
        kept = r["background_tiles_per_s"] / base["background_tiles_per_s"]
        good = r["wrong_outputs"] == 0 and r["background_check"]["ok"]
        ok &= good
        print(f"{half:<14}{r['p50_ms']:>10.2f}{r['p99_ms']:>10.2f}{r['max_ms']:>10.2f}"
              f"{kept:>11.2f}x  {'ok' if good else 'WRONG'} ({r['requests']} requests; "
              f"{r['background_check']['detail']})")
    print("background: tiles per second relative to the half without coop")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    rt.shutdown("cancel")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Plan synthetic stacks of many services; report resources, wall seconds and peak RSS.

A plan is the render plus the checks every plan runs (ordering invariants, await
budgets); the checks' share is its own column. Each size runs in its own interpreter
so peak memory is that plan's alone.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time


def synthetic_config(services: int) -> dict:
    """A valid stack with `services` services of two versions each over three GPU groups."""
    groups = [
        {"name": "cpu", "minNodes": 2, "maxNodes": 4},
        {"name": "gpu-mig", "minNodes": 1, "maxNodes": 1000,
         "gpu": {"model": "A100-80GB", "sharing": {"mode": "mig", "migStrategy": "single", "migProfile": "all-1g.10gb"}}},
        {"name": "gpu-ts", "minNodes": 1, "maxNodes": 1000,
         "gpu": {"model": "L4-24GB", "perNode": 2, "sharing": {"mode": "time-slicing", "replicas": 4}}},
        {"name": "gpu-full", "minNodes": 1, "maxNodes": 1000, "gpu": {"model": "H100-80GB"}},
    ]
    for g in groups:  # an existing cluster: each group's nodes singled out by a pool label, GPU nodes' OS declared
        g["selector"] = {"pool": g["name"]}
        if "gpu" in g:
            g["os"] = "ubuntu-24.04"
    gpu_groups = [g["name"] for g in groups if "gpu" in g]
    svcs = []
    for i in range(services):
        group = gpu_groups[i % len(gpu_groups)]
        svcs.append({
            "name": f"model-{i}",
            "hosts": [f"model-{i}.bench.example.com"],
            "mirror": {"version": "v2", "percent": 5} if i % 5 == 0 else None,
            "versions": [
                {"name": "v1", "image": "nvcr.io/nvidia/tritonserver:25.01-py3", "weight": 90,
                 "modelRepository": {"cache": "fileShare", "path": f"model-{i}/v1"}, "gpu": {"group": group}},
                {"name": "v2", "image": "nvcr.io/nvidia/tritonserver:25.02-py3", "weight": 10,
                 "modelRepository": {"cache": "fileShare", "path": f"model-{i}/v2"}, "gpu": {"group": group}},
            ],
        })
    for s in svcs:
        if s["mirror"] is None:
            del s["mirror"]
    return {
        "customer": "bench",
        "environment": "dev",
        "cluster": {"mode": "existing", "nodeGroups": groups},
        "coldStart": {"spareSlots": {"gpu-mig": 2, "gpu-full": 1}},
        "weightCaches": {"fileShare": {"mode": "existing", "server": "10.0.0.2", "path": "/models"}},
        "services": svcs,
    }


def run_one(services: int) -> dict:
    from inference_platform.settings.loader import parse_settings

    from .engine import render_config
    from .invariants import problems

    raw = synthetic_config(services)
    config = {f"inference-platform:{k}": v for k, v in raw.items()}
    start, cpu_start = time.perf_counter(), time.process_time()
    plan = render_config("bench-dev", config)
    rendered = time.perf_counter()
    _, found = problems(plan, parse_settings(raw, "stacks/Pulumi.bench-dev.yaml"))
    end, cpu_end = time.perf_counter(), time.process_time()
    if found:
        raise SystemExit(f"synthetic stack fails its plan checks: {found[0]}")
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"services": services, "resources": len(plan.resources), "seconds": round(end - start, 2),
            "cpu_seconds": round(cpu_end - cpu_start, 2), "checks_seconds": round(end - rendered, 2),
            "peak_rss_mib": round(peak_kib / 1024, 1)}


def main(sizes: list[int]) -> int:
    # CPU seconds too: on a shared machine wall time also counts other processes' load.
    print(f"{'services':>8} {'resources':>10} {'seconds':>8} {'cpu s':>7} {'checks s':>9} {'peak RSS MiB':>13} "
          f"{'s/service':>10}")
    for n in sizes:
        out = subprocess.run([sys.executable, "-c", f"import json, platformctl.bench as b; print(json.dumps(b.run_one({n})))"],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{r['services']:>8} {r['resources']:>10} {r['seconds']:>8} {r['cpu_seconds']:>7} {r['checks_seconds']:>9} "
              f"{r['peak_rss_mib']:>13} {r['seconds'] / n:>10.4f}", flush=True)
    return 0

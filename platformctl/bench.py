"""Plan synthetic stacks of many services; report resources, wall seconds and peak RSS.

Each size runs in its own interpreter so peak memory is that plan's alone.
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
        {"name": "gpu-mig", "minNodes": 1, "maxNodes": 500,
         "gpu": {"model": "A100-80GB", "sharing": {"mode": "mig", "migStrategy": "single", "migProfile": "all-1g.10gb"}}},
        {"name": "gpu-ts", "minNodes": 1, "maxNodes": 500,
         "gpu": {"model": "L4-24GB", "perNode": 2, "sharing": {"mode": "time-slicing", "replicas": 4}}},
        {"name": "gpu-full", "minNodes": 1, "maxNodes": 500, "gpu": {"model": "H100-80GB"}},
    ]
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
    from .engine import render_config

    config = {f"inference-platform:{k}": v for k, v in synthetic_config(services).items()}
    start = time.perf_counter()
    plan = render_config("bench-dev", config)
    seconds = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"services": services, "resources": len(plan.resources), "seconds": round(seconds, 2),
            "peak_rss_mib": round(peak_kib / 1024, 1)}


def main(sizes: list[int]) -> int:
    print(f"{'services':>8} {'resources':>10} {'seconds':>8} {'peak RSS MiB':>13} {'s/service':>10}")
    for n in sizes:
        out = subprocess.run([sys.executable, "-c", f"import json, platformctl.bench as b; print(json.dumps(b.run_one({n})))"],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{r['services']:>8} {r['resources']:>10} {r['seconds']:>8} {r['peak_rss_mib']:>13} {r['seconds'] / n:>10.4f}")
    return 0

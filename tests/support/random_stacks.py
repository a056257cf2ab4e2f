"""Random valid stacks from a seed: parts on and off, shared namespaces, both weight
caches, fixed and autoscaled versions, other stage times. For checks that must hold on
every stack (ordering invariants, await budgets)."""

from __future__ import annotations

import functools
import random

from inference_platform.settings.loader import parse_settings
from inference_platform.settings.stack import Settings
from platformctl.engine import Plan
from tests.conftest import render_raw

SECRETS = ("s3AccessKeyId", "s3SecretAccessKey")
SEEDS = (1, 2, 3, 4, 5, 6)
GPU_GROUPS = [
    {"name": "gpu-full", "gpu": {"model": "H100-80GB"}},
    {"name": "gpu-ts", "gpu": {"model": "L4-24GB", "perNode": 2, "sharing": {"mode": "time-slicing", "replicas": 4}}},
    {"name": "gpu-mig", "gpu": {"model": "A100-80GB", "sharing": {"mode": "mig", "migStrategy": "single",
                                                                   "migProfile": "all-1g.10gb"}}},
]


def random_stack(seed: int) -> dict:
    rnd = random.Random(seed)
    groups = rnd.sample(GPU_GROUPS, rnd.randint(1, len(GPU_GROUPS)))
    use_s3 = rnd.random() < 0.6
    use_share = not use_s3 or rnd.random() < 0.5
    caches = [c for c, on in (("fileShare", use_share), ("s3", use_s3)) if on]
    services = []
    namespaces = ["shared-a", "shared-b"]
    for s in range(rnd.randint(1, 4)):
        n = rnd.randint(1, 3)
        weights = [100 // n] * n
        weights[0] += 100 - sum(weights)
        versions = []
        for i, weight in enumerate(weights):
            version = {
                "name": f"v{i + 1}", "image": rnd.choice(["nvcr.io/nvidia/tritonserver:25.01-py3",
                                                          "nvcr.io/nvidia/tritonserver:25.02-py3"]),
                "weight": weight, "modelRepository": {"cache": rnd.choice(caches), "path": f"m{s}/v{i + 1}"},
                "gpu": {"group": rnd.choice(groups)["name"]},
                "modelLoadSeconds": rnd.choice([60, 420, 900]),
            }
            version["startupBudgetSeconds"] = version["modelLoadSeconds"] + rnd.choice([0, 300])
            if rnd.random() < 0.3:
                version["autoscaling"] = {"enabled": False}
                version["replicas"] = rnd.randint(0, 3)
            versions.append(version)
        service = {"name": f"svc{s}", "hosts": [f"svc{s}.example.com"], "versions": versions,
                   "autoscaling": {"minReplicas": 1, "maxReplicas": rnd.randint(1, 6)}}
        if rnd.random() < 0.4:
            service["namespace"] = rnd.choice(namespaces)
        services.append(service)
    raw = {
        "customer": "rand", "environment": "dev",
        "production": rnd.random() < 0.5,
        "cluster": {"mode": "existing", "nodeGroups": [{"name": "cpu", "minNodes": 1, "maxNodes": 3, "selector": {"pool": "cpu"}}]
                    + [dict(g, minNodes=1, maxNodes=60, selector={"pool": g["name"]}, os="ubuntu-24.04") for g in groups]},
        "gpuOperator": {"enabled": rnd.random() < 0.8,
                        "driver": {"mode": rnd.choice(["precompiled", "compiled", "preinstalled"])}},
        "coldStart": {"imagePrePull": rnd.random() < 0.7,
                      "spareSlots": {g["name"]: rnd.randint(0, 2) for g in groups},
                      "stageSeconds": {"nodeBoot": rnd.choice([60, 120, 600]), "imagePull": rnd.choice([150, 360, 900])}},
        "mesh": {"enabled": rnd.random() < 0.8},
        "observability": {"enabled": rnd.random() < 0.8,
                          "lokiStorage": "s3" if use_s3 and rnd.random() < 0.5 else "filesystem"},
        "weightCaches": {},
        "services": services,
    }
    if raw["production"]:
        # A production stack sends its Basic credentials over HTTPS only (credentials_in_clear_problems).
        raw["mesh"]["tls"] = {"enabled": True, "secretName": "rand-tls"}
    if use_share:
        raw["weightCaches"]["fileShare"] = {"mode": "existing", "server": "10.0.0.2", "path": "/models"}
    if use_s3:
        raw["weightCaches"]["s3"] = {"endpoint": "https://s3.rand.example", "bucket": "rand-weights",
                                     "mount": {"enabled": rnd.random() < 0.4}}
        raw |= {"s3AccessKeyId": "id", "s3SecretAccessKey": "key"}
    return raw


def _secrets(raw: dict) -> tuple[str, ...]:
    return tuple(k for k in SECRETS if k in raw)


@functools.cache
def random_plan(seed: int) -> tuple[Plan, Settings]:
    raw = random_stack(seed)
    settings = parse_settings(raw, "stacks/Pulumi.rand-dev.yaml", frozenset(_secrets(raw)))
    return render_raw(raw, stack="rand-dev", secret_keys=_secrets(raw)), settings

"""Plan synthetic stacks of many services; report each figure beside its reference.

A plan is what `platformctl plan` does: the render, the checks every plan runs
(ordering invariants, placement, await budgets) and the manifests written. The
synthetic stack is an example stack (stacks/Pulumi.demo-dev.yaml) with its services
copied under new names, so it stays valid as the stack schema grows: the tests plan
that stack too. Each size runs in its own interpreter, so peak memory is that plan's
alone. The table shows ratios, never bare times alone: CPU seconds per service against
the smallest size (flat means no part grows faster than the stack), wall seconds
against the 20 s goal and peak RSS against the 1 GiB goal at a thousand services. Under
each size, the SDK floor (bench_floor.py): the same plan's resources registered bare, in an
interpreter of its own, and our render's ratio to it.
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from inference_platform.settings.cluster import NodeGroup

from .engine import ROOT
from .stackfile import read_stack_config

PROJECT_PREFIX = "inference-platform:"
TEMPLATE_STACK = ROOT / "stacks" / "Pulumi.demo-dev.yaml"
# The schema's bound on a group's maxNodes (settings/cluster.py NodeGroup).
MAX_NODES = next(m.le for m in NodeGroup.model_fields["max_nodes"].metadata if getattr(m, "le", None) is not None)
GOAL_SECONDS = 20.0
GOAL_RSS_MIB = 1024.0


def _renamed(value: Any, pattern: re.Pattern, new: str) -> Any:
    """Every occurrence of a service's name as a whole word (host, model path, prefix) renamed."""
    if isinstance(value, str):
        return pattern.sub(new, value)
    if isinstance(value, dict):
        return {k: _renamed(v, pattern, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, pattern, new) for v in value]
    return value


def synthetic_config(services: int) -> dict[str, Any]:
    """The template stack's config (keys without the project prefix) with `services` services:
    its own ones copied round-robin as `<name>-<i>`, each GPU group's node bound raised so every
    copy's replicas fit. The copies serve without the template's Model Analyzer runs and model
    pipeline: a stack of a thousand services does not tune every one at once, and each run ships
    its tools in a ConfigMap of its own, which would weigh more than the services themselves."""
    raw = {k.removeprefix(PROJECT_PREFIX): v for k, v in read_stack_config(TEMPLATE_STACK).items()
           if k.startswith(PROJECT_PREFIX)}
    templates = [{k: v for k, v in s.items() if k != "pipeline"} for s in raw["services"]]
    for template in templates:
        template["versions"] = [{k: v for k, v in v.items() if k != "tuning"} for v in template["versions"]]
    copies = []
    for i in range(services):
        template = templates[i % len(templates)]
        pattern = re.compile(rf"\b{re.escape(template['name'])}\b")
        copies.append(_renamed(copy.deepcopy(template), pattern, f"{template['name']}-{i}"))
    raw["services"] = copies
    rounds = -(-services // len(templates))
    for group in raw["cluster"]["nodeGroups"]:
        if "gpu" in group:
            group["maxNodes"] = min(MAX_NODES, max(group["maxNodes"], group["maxNodes"] * rounds))
    return raw


def run_one(services: int, keep: Optional[str] = None) -> dict[str, Any]:
    """One size's plan, timed; written into the directory `keep` when given (else a temporary one)."""
    from inference_platform.settings.loader import parse_settings

    from .engine import render_config
    from .invariants import problems
    from .plan import write_plan

    raw = synthetic_config(services)
    config = {f"{PROJECT_PREFIX}{k}": v for k, v in raw.items()}
    start, cpu_start = time.perf_counter(), time.process_time()
    # A variant of the template's stack, `<customer>-<environment>-bench` (settings/identity.py).
    stack = f"{raw['customer']}-{raw['environment']}-bench"
    settings = parse_settings(raw, f"stacks/Pulumi.{stack}.yaml", stack=stack)
    plan = render_config(stack, config)
    rendered, cpu_rendered = time.perf_counter(), time.process_time()
    _, found = problems(plan, settings)
    checked = time.perf_counter()
    if found:
        raise SystemExit(f"synthetic stack fails its plan checks: {found[0]}")
    with contextlib.ExitStack() as cleanup:
        out = Path(keep) if keep else Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="platformctl-bench-")))
        write_plan(plan, out / "plan")
        end, cpu_end = time.perf_counter(), time.process_time()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"services": services, "resources": len(plan.resources), "seconds": end - start,
            "cpu_seconds": cpu_end - cpu_start, "render_cpu_seconds": cpu_rendered - cpu_start,
            "render_seconds": rendered - start,
            "checks_seconds": checked - rendered, "write_seconds": end - checked, "peak_rss_mib": peak_kib / 1024}


HEADER = (f"{'services':>8} {'resources':>9} {'wall s':>7} {'vs 20 s goal':>12} {'render/checks/write s':>21} "
          f"{'CPU s/service':>13} {'vs smallest':>11} {'peak RSS MiB':>12} {'vs 1 GiB goal':>13}")


def row(r: dict[str, Any], smallest: dict[str, Any]) -> str:
    """One size's figures, each with its reference beside it."""
    per_service = r["cpu_seconds"] / r["services"]
    smallest_per_service = smallest["cpu_seconds"] / smallest["services"]
    split = f"{r['render_seconds']:.1f}/{r['checks_seconds']:.1f}/{r['write_seconds']:.1f}"
    return (f"{r['services']:>8} {r['resources']:>9} {r['seconds']:>7.1f} {r['seconds'] / GOAL_SECONDS:>11.2f}x "
            f"{split:>21} {per_service:>13.4f} {per_service / smallest_per_service:>10.2f}x "
            f"{r['peak_rss_mib']:>12.0f} {r['peak_rss_mib'] / GOAL_RSS_MIB:>12.2f}x")


def floor_row(floor: dict[str, Any], ours: dict[str, Any]) -> str:
    """The SDK floor of one size (its resources registered bare) and our render's ratio to it."""
    label = "SDK floor"
    return (f"{label:>8} {floor['resources']:>9} {floor['seconds']:>7.1f} {'':>12} {'':>21} "
            f"{floor['cpu_seconds'] / ours['services']:>13.4f} {'':>11} {floor['peak_rss_mib']:>12.0f}\n"
            f"{'':>8} ours / floor: render wall {ours['render_seconds'] / floor['seconds']:.2f}x, "
            f"render CPU {ours['render_cpu_seconds'] / floor['cpu_seconds']:.2f}x, "
            f"peak RSS {ours['peak_rss_mib'] / floor['peak_rss_mib']:.2f}x")


def _in_own_interpreter(call: str, what: str) -> dict[str, Any]:
    """`platformctl.bench.<call>`'s result, run in a fresh interpreter so its peak memory is its own."""
    out = subprocess.run([sys.executable, "-c", f"import json, platformctl.bench as b; print(json.dumps(b.{call}))"],
                         capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"{what} failed (exit {out.returncode}): {last}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_floor(plan_dir: str) -> dict[str, Any]:
    from .bench_floor import run_floor as floor

    return floor(Path(plan_dir) / "resources.json")


def main(sizes: list[int]) -> int:
    # CPU seconds as well: on a shared machine wall time also counts other processes' load.
    print(f"plan of {TEMPLATE_STACK.name}'s services copied N times; goals at 1,000 services: "
          f"{GOAL_SECONDS:.0f} s wall, {GOAL_RSS_MIB:.0f} MiB peak RSS; "
          "SDK floor: the same resources registered bare (render only)")
    print(HEADER)
    smallest = None
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="platformctl-bench-") as out:
            result = _in_own_interpreter(f"run_one({n}, {out!r})", f"bench at {n} services")
            smallest = smallest or result
            print(row(result, smallest), flush=True)
            floor = _in_own_interpreter(f"run_floor({str(Path(out) / 'plan')!r})", f"SDK floor at {n} services")
            print(floor_row(floor, result), flush=True)
    return 0

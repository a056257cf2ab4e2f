"""The model pipeline's work volume: a ReadWriteOnce claim that binds where its first pod runs,
so every step that mounts it is placed like the GPU steps, and a plan where one is not fails."""

from __future__ import annotations

import copy

from platformctl.invariants import plan_resources
from platformctl.placement import shared_claim_violations
from tests.conftest import base_config, render_raw

PIPELINE = {"baseVersion": "v1", "model": "resnet50", "inputs": {"input": [3, 224, 224]}, "maxBatchSize": 16,
            "repositoryPrefix": "svc"}
PLACEMENT = ("nodeSelector", "tolerations", "affinity")


def pipeline_plan():
    raw = base_config()
    raw["services"][0]["pipeline"] = copy.deepcopy(PIPELINE)
    raw["modelPipeline"] = {"enabled": True}
    return plan_resources(render_raw(raw))


def workflow_template(resources: list[dict]) -> dict:
    (template,) = [r for r in resources if r["type"] == "kubernetes:argoproj.io/v1alpha1:WorkflowTemplate"]
    return template


def test_every_step_that_mounts_the_work_volume_runs_where_the_gpu_steps_run():
    spec = workflow_template(pipeline_plan())["inputs"]["spec"]
    steps = {t["name"]: t for t in spec["templates"] if "container" in t}
    assert sorted(steps) == ["analyze", "build", "export", "publish", "upload"]
    gpu = {k: steps["build"][k] for k in PLACEMENT}
    assert gpu["nodeSelector"] and gpu["affinity"]
    assert {name: {k: t.get(k) for k in PLACEMENT} for name, t in steps.items()} == {name: gpu for name in steps}
    # Only the GPU steps hold a GPU (analyze's is its Triton sidecar's).
    holding = {name for name, t in steps.items()
               if "nvidia.com/gpu" in str([c.get("resources") for c in [t["container"], *t.get("sidecars", [])]])}
    assert holding == {"build", "analyze"}


def test_a_step_placed_apart_from_the_others_fails_the_plan():
    resources = pipeline_plan()
    assert shared_claim_violations(resources) == []
    template = workflow_template(resources)
    export = next(t for t in template["inputs"]["spec"]["templates"] if t["name"] == "export")
    for key in PLACEMENT:
        export.pop(key)
    (problem,) = shared_claim_violations(resources)
    assert "ReadWriteOnce claim 'work'" in problem and "analyze, build, export, publish, upload" in problem

"""The documented train -> publish -> canary flow ends in a stack that plans: the pipeline's patch
adds the version the job's publishTo names, with the job's Workflow and ONNX file as provenance,
and that version is the flow's result, not a clash; a version of that name from elsewhere still is."""

from __future__ import annotations

import json

import pytest
import yaml

from inference_platform.settings.training_publish import onnx_path, publish_version, workflow_name
from platformctl.__main__ import main
from platformctl.engine import stack_settings
from platformctl.patch import canary_patch
from tests.conftest import ROOT

SHA = "ab" * 32


def _pipeline_patch(settings, workflow: str, onnx: str) -> dict:
    """The patch embed's pipeline writes for the job's run (tuning/pipeline.py passes these flags)."""
    job = next(j for j in settings.training.jobs if j.publish_to is not None)
    svc = next(s for s in settings.services if s.name == job.publish_to.service)
    base = next(v for v in svc.versions if v.name == svc.pipeline.base_version)
    version = publish_version(job)
    return canary_patch(svc.name, base.name, version, base.model_repository.cache,
                        f"{svc.pipeline.repository_prefix.strip('/')}/{version}", f"tuned-{version}-1",
                        svc.pipeline.canary_weight, {"workflow": workflow, "onnx": onnx, "onnxSha256": SHA})


@pytest.fixture()
def train_dev(tmp_path):
    stack_file = tmp_path / "Pulumi.train-dev.yaml"
    stack_file.write_text((ROOT / "stacks" / "Pulumi.train-dev.yaml").read_text())
    return stack_file, stack_settings(stack_file)


def _apply(tmp_path, stack_file, patch: dict) -> int:
    patch_file = tmp_path / "patch.json"
    patch_file.write_text(json.dumps(patch))
    return main(["patch", str(stack_file), str(patch_file)])


def test_the_jobs_own_pipeline_patch_applies_and_the_patched_stack_plans(train_dev, tmp_path, capsys):
    stack_file, settings = train_dev
    job = next(j for j in settings.training.jobs if j.publish_to is not None)
    assert _apply(tmp_path, stack_file, _pipeline_patch(settings, workflow_name(job), onnx_path(job))) == 0
    config = yaml.safe_load(stack_file.read_text())["config"]
    embed = next(s for s in config["inference-platform:services"] if s["name"] == job.publish_to.service)
    assert publish_version(job) in [v["name"] for v in embed["versions"]]
    assert main(["plan", "train-dev", "--stack-file", str(stack_file), "--out", str(tmp_path / "plan")]) == 0


def test_a_version_of_that_name_another_run_made_is_still_refused(train_dev, tmp_path, capsys):
    stack_file, settings = train_dev
    job = next(j for j in settings.training.jobs if j.publish_to is not None)
    before = stack_file.read_text()
    assert _apply(tmp_path, stack_file, _pipeline_patch(settings, "embed-pipeline-x7k2p", onnx_path(job))) != 0
    err = capsys.readouterr().err
    assert f"training.jobs[{job.name}].publishTo.version" in err and "did not make" in err
    assert stack_file.read_text() == before

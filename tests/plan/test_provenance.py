"""A version the model pipeline made records where it came from: the workflow and the ONNX file
(path and SHA-256) its patch names, as annotations on its Deployment."""

from __future__ import annotations

import pytest

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from platformctl.patch import apply_patch, canary_patch, read_patch
from platformctl.plan import is_k8s_object, manifest
from tests.conftest import ROOT, base_config, render_raw

PROVENANCE = {"workflow": "svc-pipeline-x7k2q", "onnx": "svc/training/model.onnx", "onnxSha256": "ab" * 32}


def deployment(raw: dict) -> dict:
    (found,) = [manifest(r) for r in render_raw(raw).resources if is_k8s_object(r) and r.inputs.get("kind") == "Deployment"
                and manifest(r)["metadata"].get("labels", {}).get("app") == "svc"]
    return found


def test_a_pipeline_made_version_carries_its_provenance_on_its_deployment():
    raw = base_config()
    raw["services"][0]["versions"][0]["provenance"] = dict(PROVENANCE)
    made = deployment(raw)
    annotations = made["metadata"]["annotations"]
    assert {k: v for k, v in annotations.items() if k.startswith("inference-platform/")} == {
        "inference-platform/workflow": "svc-pipeline-x7k2q", "inference-platform/onnx": "svc/training/model.onnx",
        "inference-platform/onnx-sha256": "ab" * 32}
    # A record, not a rollout: the pod template is the same as without it.
    assert made["spec"]["template"] == deployment(base_config())["spec"]["template"]


@pytest.mark.parametrize("bad", [{"onnxSha256": "AB" * 32}, {"onnxSha256": "ab"}, {"onnx": "../etc/passwd"},
                                 {"workflow": "Bad_Name"}])
def test_provenance_that_is_not_a_hash_a_path_and_a_workflow_name_is_refused(bad):
    raw = base_config()
    raw["services"][0]["versions"][0]["provenance"] = PROVENANCE | bad
    with pytest.raises(ConfigError) as info:
        parse_settings(raw, "stacks/Pulumi.test.yaml")
    assert info.value.paths[0].startswith("inference-platform:services[svc].versions[v1].provenance")


def test_the_patch_records_the_new_versions_provenance_and_never_copies_the_bases(tmp_path):
    import yaml

    stack = (ROOT / "stacks" / "Pulumi.demo-dev.yaml").read_bytes()
    first = tmp_path / "first.json"
    first.write_text(yaml.safe_dump(canary_patch("resnet", "v2", "v3", "fileShare", "resnet/v3", "tuned-v3-1", 10,
                                                 dict(PROVENANCE))))
    once = apply_patch(stack, read_patch(first, "first"), "stacks/Pulumi.demo-dev.yaml")
    second = tmp_path / "second.json"
    second.write_text(yaml.safe_dump(canary_patch("resnet", "v3", "v4", "fileShare", "resnet/v4", "tuned-v4-1", 5)))
    twice = yaml.safe_load(apply_patch(once.encode(), read_patch(second, "second"), "stacks/Pulumi.demo-dev.yaml"))
    versions = {v["name"]: v for v in twice["config"]["inference-platform:services"][0]["versions"]}
    assert versions["v3"]["provenance"] == PROVENANCE
    assert "provenance" not in versions["v4"]

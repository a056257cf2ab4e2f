"""The offline plan: every example stack renders, bad stacks exit 2 with one line,
secrets never reach resources.json, every rendered object validates."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from platformctl.engine import SECURE_PLACEHOLDER
from platformctl.plan import HELM_RELEASE, is_k8s_object
from tests.conftest import ROOT, STACKS, as_magnum, base_config, render_raw, stack_plan
from tests.support import conformance


def run_ctl(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "platformctl", *args], cwd=cwd, capture_output=True, text=True)


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_plans(stack, tmp_path):
    out = tmp_path / stack
    result = run_ctl("plan", stack, "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert f"resources in stack {stack}" in result.stdout
    data = json.loads((out / "resources.json").read_text())
    assert data["stack"] == stack
    for r in data["resources"]:
        assert set(r) >= {"type", "name", "parent", "provider", "dependsOn", "protect", "retainOnDelete", "inputs"}
    # Every Kubernetes object and Helm release has its own manifest file.
    expected = sum(1 for r in stack_plan(stack).resources if is_k8s_object(r) or r.type == HELM_RELEASE)
    assert len(list((out / "manifests").glob("*.yaml"))) == expected


def test_invalid_stack_exits_2_with_one_line(tmp_path):
    # A copy outside the repository: tests in parallel watch stacks/ for anything that writes there.
    stack_file = tmp_path / "Pulumi.zz-broken.yaml"
    stack_file.write_text((ROOT / "stacks" / "Pulumi.demo-dev.yaml").read_text().replace("perNode: 1", "perNodes: 1"))
    result = run_ctl("plan", "zz-broken", "--stack-file", str(stack_file), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Pulumi.zz-broken.yaml: " in lines[0].split("invalid configuration")[0]
    assert "inference-platform:cluster.nodeGroups[gpu-a100].gpu.perNodes: unknown key" in lines[0]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_misspelt_namespace_that_would_turn_production_off_exits_2_with_one_line(tmp_path):
    text = (ROOT / "stacks" / "Pulumi.acme-prod.yaml").read_text()
    assert "\n  inference-platform:production: true\n" in text
    stack_file = tmp_path / "Pulumi.acme-prod.yaml"
    stack_file.write_text(text.replace("inference-platform:production: true", "inference-platfrom:production: true"))
    result = run_ctl("plan", "acme-prod", "--stack-file", str(stack_file), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"{stack_file}: invalid configuration: inference-platfrom:production: namespace 'inference-platfrom' is not "
        "this project's, so Pulumi would ignore the key silently; did you mean `inference-platform:production`? "
        "Allowed namespaces: inference-platform (this project), pulumi, kubernetes, openstack, random, aws, "
        "azure-native, gcp, tls, command, or any namespace not close to 'inference-platform'"]
    assert not (tmp_path / "out").exists()


def test_several_problems_print_one_complete_line_each_exit_2_and_write_nothing(tmp_path):
    text = (ROOT / "stacks" / "Pulumi.demo-dev.yaml").read_text()
    stack_file = tmp_path / "Pulumi.demo-dev.yaml"
    stack_file.write_text(text.replace("perNode: 1", "perNodes: 1").replace("weight: 90", "weight: lots"))
    result = run_ctl("plan", "demo-dev", "--stack-file", str(stack_file), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith(f"{stack_file}: invalid configuration: inference-platform:cluster.nodeGroups[gpu-a100].gpu.perNodes: ")
    assert lines[1].startswith(f"{stack_file}: invalid configuration: inference-platform:services[resnet].versions[v1].weight: ")
    assert not (tmp_path / "out").exists()


def test_missing_stack_exits_2():
    result = run_ctl("plan", "no-such-stack")
    assert result.returncode == 2
    assert "no stack file stacks/Pulumi.no-such-stack.yaml" in result.stderr
    assert f"stacks in stacks/: {', '.join(STACKS)}" in result.stderr and "--stack-file" in result.stderr


def test_a_stack_file_path_given_as_the_stack_name_gets_both_ways_to_plan_it():
    result = run_ctl("plan", "stacks/Pulumi.demo-dev.yaml")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "give the stack's name, 'demo-dev', or --stack-file 'stacks/Pulumi.demo-dev.yaml'" in result.stderr


@pytest.mark.parametrize("stack", STACKS)
def test_no_secret_in_resources_json(stack):
    text = json.dumps(stack_plan(stack).to_json())
    assert SECURE_PLACEHOLDER not in text


def test_secret_config_is_redacted_and_marked():
    secret = "kubeconfig-with-token-s3cr3t-value"
    raw = base_config() | {"kubeconfig": secret}
    plan = render_raw(raw, secret_keys=("kubeconfig",))
    text = json.dumps(plan.to_json())
    assert secret not in text
    provider = plan.of_type("pulumi:providers:kubernetes")[0]
    assert provider.inputs["kubeconfig"] == "[secret]"


def test_production_protects_the_cluster():
    plan = stack_plan("acme-prod")
    for r in plan.of_type("openstack:containerinfra/cluster:Cluster") + plan.of_type("openstack:containerinfra/nodeGroup:NodeGroup"):
        assert r.protect, r.name
    raw = as_magnum(base_config())
    raw["cluster"]["nodeGroups"][1]["flavor"] = "g1.a100"
    dev = render_raw(raw)
    assert not any(r.protect for r in dev.resources)


@pytest.mark.parametrize("doc", [p for stack in STACKS for p in conformance.object_params(stack, stack_plan(stack))])
def test_rendered_object_validates(doc, reference):
    conformance.validate(doc)


def test_children_are_parented_to_components():
    plan = stack_plan("demo-dev")
    urns = {r.urn for r in plan.resources}
    for r in plan.resources:
        assert r.parent in urns or r.type == "inference-platform:index:InferencePlatform", r.urn


def test_configuration_reference_and_generated_docs_are_current_and_complete():
    from platformctl import docs

    assert docs.undocumented() == []
    result = run_ctl("docs", "--check")
    assert result.returncode == 0, result.stderr

"""The offline policy run: example stacks pass, a hostile plan fails with exactly the
expected violations, and the policy config carries the stack's facts and overrides."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from inference_platform.settings.policies import POLICY_NAMES
from platformctl.__main__ import main
from platformctl.engine import render_stack, stack_path, stack_settings
from platformctl.policy import format_report, policy_config, run_policies
from tests.conftest import STACKS, base_config, stack_plan

HOSTILE = Path(__file__).parents[1] / "data" / "Pulumi.hostile-prod.yaml"


def violations_of(plan_json: dict, stack_file: Path) -> list:
    return run_policies(plan_json, policy_config(stack_settings(stack_file)))


@pytest.mark.parametrize("stack", STACKS)
def test_example_stack_passes_every_policy(stack):
    found = violations_of(stack_plan(stack).to_json(), stack_path(stack))
    assert [v for v in found if v.level == "mandatory"] == [], format_report(found)


def test_cli_exit_code_of_an_example_stack(capsys):
    assert main(["policy", "demo-dev"]) == 0, capsys.readouterr().out


# --------------------------------------------------------------------------- the hostile plan


def _find(plan: dict, type_: str, name: str | None = None) -> dict:
    found = [r for r in plan["resources"] if r["type"] == type_ and (name is None or r["name"] == name)]
    assert len(found) == 1, (type_, name, len(found))
    return found[0]


def _container(plan: dict, deployment: str) -> dict:
    return _find(plan, "kubernetes:apps/v1:Deployment", deployment)["inputs"]["spec"]["template"]["spec"]["containers"][0]


def make_hostile(plan: dict) -> dict:
    """What stack validation would refuse, written straight into a rendered production plan."""
    _container(plan, "chat-v1")["securityContext"]["privileged"] = True
    _container(plan, "chat-v2")["image"] = "nvcr.io/nvidia/tritonserver:latest"
    _find(plan, "kubernetes:core/v1:Service", "chat-service")["inputs"]["spec"]["type"] = "LoadBalancer"
    _find(plan, "pulumi-python:dynamic/s3:Bucket")["protect"] = False
    vs = _find(plan, "kubernetes:networking.istio.io/v1:VirtualService", "chat-virtualservice")["inputs"]["spec"]
    http = [rule for rule in vs["http"] if "route" in rule]  # auth 'none': no 401 route, no header match
    for rule in http:
        rule["route"][1]["weight"] = 30  # 80 / 30
        for match in rule.get("match", []):
            match.get("headers", {}).pop("authorization", None)
    vs["http"] = http
    return plan


EXPECTED = Counter({
    ("pod-security-restricted", "kubernetes:apps/v1:Deployment::chat-v1"): 1,
    ("no-privileged-containers", "kubernetes:apps/v1:Deployment::chat-v1"): 1,
    ("images-pinned", "kubernetes:apps/v1:Deployment::chat-v2"): 1,
    ("no-loadbalancer-services", "kubernetes:core/v1:Service::chat-service"): 1,
    ("virtualservice-weights-sum", "kubernetes:networking.istio.io/v1:VirtualService::chat-virtualservice"): 2,
    ("no-open-auth-in-production", "kubernetes:networking.istio.io/v1:VirtualService::chat-virtualservice"): 1,
    ("stateful-resources-protected", "pulumi-python:dynamic/s3:Bucket::hostile-prod-weights-bucket"): 1,
})


def _key(v) -> tuple[str, str]:
    # The resource without its parent chain: `<type>::<name>`.
    return v.policy, v.resource.rsplit("$", 1)[-1]


@pytest.fixture(scope="module")
def hostile_plans(tmp_path_factory) -> tuple[dict, Path]:
    baseline = render_stack("hostile-prod", HOSTILE).to_json()
    out = tmp_path_factory.mktemp("hostile") / "resources.json"
    out.write_text(json.dumps(make_hostile(json.loads(json.dumps(baseline)))))
    return baseline, out


def test_hostile_baseline_passes(hostile_plans):
    baseline, _ = hostile_plans
    found = violations_of(baseline, HOSTILE)
    assert [v for v in found if v.level == "mandatory"] == [], format_report(found)


def test_hostile_plan_reports_exactly_the_expected_violations(hostile_plans):
    baseline, path = hostile_plans
    before = Counter(_key(v) for v in violations_of(baseline, HOSTILE))
    after = Counter(_key(v) for v in violations_of(json.loads(path.read_text()), HOSTILE))
    assert after == before + EXPECTED


def test_hostile_plan_fails_the_cli(hostile_plans, capsys):
    _, path = hostile_plans
    assert main(["policy", "hostile-prod", "--plan", str(path.parent), "--stack-file", str(HOSTILE)]) == 1
    out = capsys.readouterr().out
    for policy, resource in EXPECTED:
        assert f"{policy} (mandatory)" in out and resource.split("::")[-1] in out
    assert out.count("Fix: ") >= sum(EXPECTED.values())


# --------------------------------------------------------------------------- policy config


def test_policy_config_carries_facts_and_levels(capsys):
    assert main(["policy-config", "acme-prod"]) == 0
    config = json.loads(capsys.readouterr().out)
    assert sorted(config) == sorted(POLICY_NAMES)
    assert config["stateful-resources-protected"] == {"enforcementLevel": "mandatory", "production": True}
    assert config["gpu-quota"]["gpuQuota"] == 16
    assert config["gpu-quota"]["gpuGroups"]["gpu-l4"] == {"gpusPerNode": 2, "maxNodes": 4, "resources": ["nvidia.com/gpu"],
                                                          "selector": {"node.cluster.x-k8s.io/nodegroup": "gpu-l4"}}
    assert config["hpa-target-sets-no-replicas"] == {"enforcementLevel": "advisory"}


def test_stack_overrides_enforcement():
    raw = base_config() | {"policies": {"enforcement": {"triton-probes": "advisory", "gpu-quota": "disabled"}}}
    config = policy_config(parse_settings(raw, "stacks/Pulumi.test-dev.yaml"))
    assert config["triton-probes"]["enforcementLevel"] == "advisory"
    assert config["gpu-quota"]["enforcementLevel"] == "disabled"


def test_disabled_and_advisory_policies_do_not_fail_the_run():
    plan = {"resources": [{
        "urn": "urn:pulumi:t::p::kubernetes:helm.sh/v3:Release::x", "type": "kubernetes:helm.sh/v3:Release",
        "name": "x", "parent": None, "custom": True, "provider": None, "dependsOn": [], "protect": False,
        "retainOnDelete": False, "deleteBeforeReplace": False, "ignoreChanges": [], "inputs": {"chart": "c", "version": "^1"},
    }]}
    assert len(run_policies(plan, {})) == 1
    assert run_policies(plan, {"chart-versions-pinned": {"enforcementLevel": "disabled"}}) == []
    [advisory] = run_policies(plan, {"chart-versions-pinned": {"enforcementLevel": "advisory"}})
    assert advisory.level == "advisory"


def test_unknown_policy_name_is_refused():
    raw = base_config() | {"policies": {"enforcement": {"no-such-policy": "advisory"}}}
    with pytest.raises(ConfigError) as err:
        parse_settings(raw, "stacks/Pulumi.test-dev.yaml")
    assert err.value.paths == ["inference-platform:policies.enforcement"]
    assert "no-such-policy" in str(err.value) and "triton-probes" in str(err.value)

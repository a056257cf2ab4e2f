"""Two resources declaring one object (or one URN) are refused naming the stack file and the
keys that made them; the loader refuses the service names known to collide before rendering."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import shutil

import pytest
import yaml

from inference_platform.core import controller_names
from inference_platform.settings import loader
from inference_platform.settings.checks import CROSS_CHECKS, derived_name_clashes
from inference_platform.settings.controller_clashes import stack_controller_name_problems
from platformctl.__main__ import main
from platformctl.engine import render_stack, stack_settings
from platformctl.objects import DuplicateObjectError, check_unique_objects, made_at_up
from platformctl.plan_model import Plan
from platformctl.stack_keys import stack_keys
from tests.conftest import ROOT

SERVICES = "inference-platform:services"


def _with_service_named(tmp_path, name: str):
    """The demo stack with a second service `name` in the first service's namespace."""
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.demo-dev.yaml").read_text())
    first = doc["config"][SERVICES][0]
    second = {"name": name, "namespace": first["name"], "hosts": [f"{name}.demo.example.com"],
              "versions": [dict(first["versions"][0], weight=100)]}
    doc["config"][SERVICES].append(second)
    stack_file = tmp_path / "Pulumi.demo-dev-clash.yaml"
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    return stack_file


def _plan(stack_file, out) -> tuple[int, list[str]]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["plan", "demo-dev-clash", "--stack-file", str(stack_file), "--out", str(out)])
    return code, err.getvalue().splitlines()


@pytest.mark.parametrize("name,what", [("resnet-tuning", "tuning NetworkPolicy"), ("resnet-pipeline", "pipeline objects")])
def test_a_service_named_like_another_services_objects_is_refused_before_rendering(tmp_path, name, what):
    code, lines = _plan(_with_service_named(tmp_path, name), tmp_path / "out")
    assert code == 2 and len(lines) == 1, lines
    assert f"inference-platform:services[1].name: {name!r} is the name of services[0]'s {what}" in lines[0], lines[0]


def test_a_duplicate_the_loader_misses_names_the_stack_file_and_keys_not_urns(tmp_path, monkeypatch):
    # Without the loader's check, the plan still refuses, tracing each resource to its stack keys.
    assert derived_name_clashes in CROSS_CHECKS and CROSS_CHECKS in loader.STACK_CHECKS
    stages = tuple(tuple(c for c in stage if c is not derived_name_clashes) for stage in loader.STACK_CHECKS)
    monkeypatch.setattr(loader, "STACK_CHECKS", stages)
    stack_file = _with_service_named(tmp_path, "resnet-tuning")
    code, lines = _plan(stack_file, tmp_path / "out")
    assert code == 2 and len(lines) == 1, lines
    line = lines[0]
    assert line.startswith(f"{stack_file}: duplicate resources: NetworkPolicy resnet-tuning-networkpolicy is "
                           "registered twice (one URN) by inference-platform:services[0] (resnet-tuning-networkpolicy) "
                           "and inference-platform:services[1] (resnet-tuning-networkpolicy)"), line
    assert "urn:pulumi" not in line
    assert not (tmp_path / "out").exists()


def test_a_pipelines_objects_are_traced_to_the_service_whose_pipeline_made_them(tmp_path):
    stack_file = tmp_path / "Pulumi.demo-dev.yaml"
    shutil.copyfile(ROOT / "stacks" / stack_file.name, stack_file)
    plan = render_stack("demo-dev", stack_file)
    where = stack_keys(plan, stack_settings(stack_file))
    by_name = {r.name: r for r in plan.resources}
    assert where(by_name["demo-dev-pipeline-resnet-sa"]) == "inference-platform:services[0].pipeline"
    assert where(by_name["demo-dev-mesh"]) == "inference-platform:mesh"
    twin = dataclasses.replace(by_name["demo-dev-pipeline-resnet-sa"], urn=by_name["demo-dev-pipeline-resnet-sa"].urn + "-2")
    with pytest.raises(DuplicateObjectError) as caught:
        check_unique_objects(Plan(plan.stack, [*plan.resources, twin], plan.outputs), where)
    assert "ServiceAccount resnet/resnet-pipeline is declared by inference-platform:services[0].pipeline" in str(caught.value)


def _acme_with_service(tmp_path, name: str, namespace: str):
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.acme-prod.yaml").read_text())
    embed = next(s for s in doc["config"][SERVICES] if s["name"] == "embed")
    doc["config"][SERVICES].append(dict(embed, name=name, namespace=namespace, hosts=[f"{name}.acme.example.com"]))
    stack_file = tmp_path / "Pulumi.acme-prod.yaml"
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    return stack_file


def _without_controller_name_check(monkeypatch):
    assert stack_controller_name_problems in CROSS_CHECKS
    stages = tuple(tuple(c for c in stage if c is not stack_controller_name_problems) for stage in loader.STACK_CHECKS)
    monkeypatch.setattr(loader, "STACK_CHECKS", stages)


@pytest.mark.parametrize("name, maker", [
    ("llm-chat-istio", "ServiceAccount llm-chat/llm-chat-istio is declared by inference-platform:services[2] "
                       "(llm-chat-istio-sa) and istiod for Gateway llm-chat/llm-chat (made at `up` time)"),
    ("llm-chat-v7-epp", "ServiceAccount llm-chat/llm-chat-v7-epp is declared by inference-platform:services[2] "
                        "(llm-chat-v7-epp-sa) and Helm release llm-chat/llm-chat-v7 (made at `up` time)"),
])
def test_an_object_named_like_one_a_controller_makes_at_up_time_fails_the_plan(tmp_path, monkeypatch, name, maker):
    # Without the settings' check, the rendered plan still refuses the clash, naming the stack key and the maker.
    _without_controller_name_check(monkeypatch)
    code, lines = _plan_stack(_acme_with_service(tmp_path, name, "llm-chat"), tmp_path / "out")
    assert code == 2 and len(lines) == 1, lines
    assert maker in lines[0], lines[0]


def _plan_stack(stack_file, out) -> tuple[int, list[str]]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["plan", "acme-prod", "--stack-file", str(stack_file), "--out", str(out)])
    return code, err.getvalue().splitlines()


def test_what_istiod_makes_follows_the_gateways_class_and_overlays_and_each_inference_pool():
    gateway = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "g", "namespace": "ns"},
               "spec": {"gatewayClassName": "istio", "infrastructure": {"parametersRef": {"name": "p"}}}}
    overlays = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p", "namespace": "ns"},
                "data": {"deployment": "{}", "podDisruptionBudget": "{}"}}
    pool = {"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool", "metadata": {"name": "a-v1", "namespace": "ns"}}
    made = {key for key, _ in made_at_up([gateway, overlays, pool])}
    assert {k[1] for k in made if k[3] == "g-istio"} == {"ServiceAccount", "Deployment", "Service", "PodDisruptionBudget"}
    assert ("", "Service", "ns", controller_names.inference_pool_service_name("a-v1")) in made
    # Without the overlay istiod makes no disruption budget; another class is another controller's.
    assert "PodDisruptionBudget" not in {k[1] for k, _ in made_at_up([gateway])}
    other = {**gateway, "spec": {"gatewayClassName": "other"}}
    assert made_at_up([other]) == []


def test_what_kuberay_keeps_for_a_rayservice_is_made_at_up_time():
    rayservice = {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "g", "namespace": "ns"}}
    assert {key for key, _ in made_at_up([rayservice])} == {("", "Service", "ns", "g-head-svc"), ("", "Service", "ns", "g-serve-svc")}

"""A service, version or graph name that gives one of its objects the name of an object made at
`up` time (core/controller_names.py) is refused at settings time in one line, in the stack's
checks and in TritonService's own input checks (settings/controller_clashes.py). The case that
matters most: a service named `<gateway>-istio` beside an LLM service runs its pods under the
gateway's ServiceAccount, the principal the LLM pods' AuthorizationPolicy admits."""

from __future__ import annotations

import copy

import pytest
import yaml

from inference_platform.serving.inputs import TritonServiceInputs
from inference_platform.settings.errors import ConfigError
from platformctl.engine import stack_settings
from tests.conftest import ROOT

SERVICES = "inference-platform:services"
GRAPHS = "inference-platform:graphs"


def _acme() -> dict:
    return yaml.safe_load((ROOT / "stacks" / "Pulumi.acme-prod.yaml").read_text())


def _refused(tmp_path, doc: dict) -> ConfigError:
    stack_file = tmp_path / "Pulumi.acme-prod.yaml"
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ConfigError) as info:
        stack_settings(stack_file)
    assert "\n" not in info.value.one_line().strip()
    return info.value


def _classic_service(doc: dict, name: str, namespace: str) -> dict:
    embed = next(s for s in doc["config"][SERVICES] if s["name"] == "embed")
    return dict(copy.deepcopy(embed), name=name, namespace=namespace, hosts=[f"{name}.acme.example.com"])


def _with_version(doc: dict, name: str) -> dict:
    chat = doc["config"][SERVICES][0]
    chat["versions"].append(dict(copy.deepcopy(chat["versions"][1]), name=name, weight=0))
    return doc


def _paths(err: ConfigError) -> list[str]:
    return [p.removeprefix("inference-platform:") for p in err.paths]


def test_a_service_named_like_the_llm_gateway_is_refused_because_its_pods_would_run_as_the_gateway(tmp_path):
    doc = _acme()
    doc["config"][SERVICES].append(_classic_service(doc, "llm-chat-istio", "llm-chat"))
    err = _refused(tmp_path, doc)
    assert _paths(err) == ["services[2].name"], err.one_line()
    line = err.one_line()
    assert ("gives its ServiceAccount the name of ServiceAccount llm-chat/llm-chat-istio, what istiod deploys for the "
            "Gateway of services[llm-chat]") in line
    assert "which the LLM pods' AuthorizationPolicy admits as the gateway's" in line
    assert "allowed: a name none of whose objects is one made at `up` time in its namespace" in line


@pytest.mark.parametrize("version, clash", [
    ("istio", "Deployment.apps llm-chat/llm-chat-istio, what istiod deploys for the Gateway of services[llm-chat]"),
    ("v7-epp", "Deployment.apps llm-chat/llm-chat-v7-epp, what the router release of services[llm-chat].versions[v7] "
               "('llm-chat-v7') installs"),
])
def test_a_version_whose_deployment_is_named_like_a_controllers_is_refused(tmp_path, version, clash):
    err = _refused(tmp_path, _with_version(_acme(), version))
    assert _paths(err) == ["services[llm-chat].versions[2].name"], err.one_line()
    assert f"gives its Deployment the name of {clash}" in err.one_line()


def test_a_service_named_like_a_versions_endpoint_picker_is_refused(tmp_path):
    doc = _acme()
    doc["config"][SERVICES].append(_classic_service(doc, "llm-chat-v7-epp", "llm-chat"))
    err = _refused(tmp_path, doc)
    assert "gives its ServiceAccount the name of ServiceAccount llm-chat/llm-chat-v7-epp, what the router release of " \
           "services[llm-chat].versions[v7] ('llm-chat-v7') installs" in err.one_line()


def test_an_ensemble_graph_named_like_the_llm_gateway_is_refused(tmp_path):
    doc, studio = _acme(), yaml.safe_load((ROOT / "stacks" / "Pulumi.studio-dev.yaml").read_text())
    graph = copy.deepcopy(next(g for g in studio["config"][GRAPHS] if g["placement"] == "ensemble"))
    graph.update(name="llm-chat-istio", namespace="llm-chat", hosts=["graph.acme.example.com"])
    for step in graph["steps"]:
        step["gpu"] = {"group": "gpu-l4"}
        step["modelRepository"] = {"cache": "fileShare", "path": "graph"}
    doc["config"][GRAPHS] = [graph]
    err = _refused(tmp_path, doc)
    assert _paths(err) == ["graphs[0].name"], err.one_line()
    assert "ServiceAccount llm-chat/llm-chat-istio" in err.one_line()


def test_the_same_names_in_another_namespace_plan(tmp_path):
    doc = _acme()
    doc["config"][SERVICES].append(_classic_service(doc, "llm-chat-istio", "elsewhere"))
    stack_file = tmp_path / "Pulumi.acme-prod.yaml"
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert [s.name for s in stack_settings(stack_file).services][-1] == "llm-chat-istio"


def test_triton_service_used_alone_refuses_a_version_named_like_its_gateway():
    settings = stack_settings("acme-prod")
    chat = settings.services[0]
    raw = chat.model_dump(by_alias=True, exclude_unset=True)
    raw["versions"].append(dict(copy.deepcopy(raw["versions"][1]), name="istio", weight=0))
    inputs = TritonServiceInputs(service=type(chat).model_validate(raw), gpu_groups=settings.gpu_groups)
    problems = inputs.problems()
    assert any(path == ("service", "versions", 2, "name") and "Deployment.apps llm-chat/llm-chat-istio" in why
               for path, why in problems), problems
    assert not [p for p in TritonServiceInputs(service=chat, gpu_groups=settings.gpu_groups).problems()
                if "made at `up` time" in p[1]]


def test_a_service_named_like_the_service_kuberay_keeps_for_a_ray_graph_is_refused(tmp_path):
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.studio-dev.yaml").read_text())
    ray = next(g for g in doc["config"][GRAPHS] if g["placement"] == "ray")
    service = _classic_service(_acme(), f"{ray['name']}-serve-svc", ray["name"])
    service.update(hosts=["serve.studio.example.com"], auth={"mode": "none"})
    service["versions"][0].update(gpu={"group": "gpu-l4"}, modelRepository={"cache": "fileShare", "path": "serve"})
    doc["config"][SERVICES] = [service]
    stack_file = tmp_path / "Pulumi.studio-dev.yaml"
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ConfigError) as info:
        stack_settings(stack_file)
    assert f"gives its Service the name of Service {ray['name']}/{ray['name']}-serve-svc, what KubeRay makes for the " \
           f"RayService of graphs[{ray['name']}]" in info.value.one_line()


def test_two_router_releases_whose_cluster_roles_share_a_name_are_refused(tmp_path):
    # The chart names its ClusterRole `<release>-<namespace>-epp`: llm-chat-v7 in llm-chat and
    # llm-chat-v7-llm in chat both make `llm-chat-v7-llm-chat-epp`, and Helm refuses the second.
    doc = _acme()
    chat = copy.deepcopy(doc["config"][SERVICES][0])
    chat.update(name="llm-chat-v7", namespace="chat", hosts=["other-chat.acme.example.com"])
    chat["versions"] = [dict(chat["versions"][0], name="llm", weight=100)]
    doc["config"][SERVICES].append(chat)
    err = _refused(tmp_path, doc)
    assert ("ClusterRole.rbac.authorization.k8s.io llm-chat-v7-llm-chat-epp would be made twice, by what the router "
            "release of services[llm-chat-v7].versions[llm] ('llm-chat-v7-llm') installs and by what the router release "
            "of services[llm-chat].versions[v7] ('llm-chat-v7') installs") in err.one_line(), err.one_line()

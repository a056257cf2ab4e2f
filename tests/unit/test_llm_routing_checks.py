"""What the Gateway API routing of an LLM service refuses, each as one line naming the key
(settings/serving.py llm_routing_problems), and the values its endpoint picker gets."""

import pytest

from inference_platform.serving.llm_routing import endpoint_picker_values, http_route_spec
from inference_platform.settings.loader import parse_settings
from tests.unit.test_llm_memory import STACK_FILE, refused
from tests.unit.test_llm_memory import stack as llm_stack

VLLM_IMAGE = "nvcr.io/nvidia/tritonserver:25.01-vllm-python-py3"


def stack(**llm_keys) -> dict:
    """The LLM test stack with its version behind the OpenAI frontend: a routed LLM service."""
    raw = llm_stack(**llm_keys, openai={})
    raw["services"][0]["versions"][0]["image"] = VLLM_IMAGE
    return raw


def test_basic_auth_on_an_llm_service_takes_only_a_basic_credential_and_needs_the_platforms_mesh():
    raw = stack(maxConcurrentSequences=32)
    raw["services"][0]["auth"] = {"mode": "basic"}
    service = parse_settings(raw, STACK_FILE).services[0]
    # Every OpenAI path matches only with one `Basic <base64>` value, as the classic routes.
    for match in http_route_spec(service)["rules"][0]["matches"]:
        assert match["headers"] == [{"type": "RegularExpression", "name": "Authorization",
                                     "value": "Basic [A-Za-z0-9+/]+={0,2}"}]
    raw["services"][0]["auth"] = {"mode": "none"}
    assert all("headers" not in m for m in http_route_spec(parse_settings(raw, STACK_FILE).services[0])["rules"][0]["matches"])
    # A cluster's own Istio: the check would not reach the service's Gateway.
    raw["services"][0]["auth"] = {"mode": "basic"}
    raw["mesh"] = {**raw.get("mesh", {}), "enabled": False}
    assert "services[svc].auth.mode: basic on a service whose versions serve the OpenAI API needs mesh.enabled" in refused(raw)


def test_a_version_without_llm_in_an_llm_service_is_refused():
    raw = stack(maxConcurrentSequences=32)
    plain = dict(raw["services"][0]["versions"][0], name="plain", weight=0)
    plain.pop("llm")
    raw["services"][0]["versions"].append(plain)
    assert "services[svc].versions[plain].llm: required: every version of a service whose versions serve the OpenAI API" in refused(raw)
    # An LLM version without the frontend is no more reachable through the service's pools.
    raw["services"][0]["versions"][1] = dict(raw["services"][0]["versions"][0], name="plain", weight=0,
                                             llm={k: v for k, v in raw["services"][0]["versions"][0]["llm"].items() if k != "openai"})
    assert "services[svc].versions[plain].llm.openai: required" in refused(raw)


def test_an_endpoint_picker_release_longer_than_the_chart_keeps_is_refused():
    raw = stack(maxConcurrentSequences=32)
    raw["services"][0]["name"] = "s" * 30
    raw["services"][0]["versions"][0]["name"] = "v" * 15
    assert "allowed: service and version names of at most 40 together" in refused(raw)


def test_mirror_retries_and_llm_routing_outside_an_llm_service_are_refused():
    raw = stack(maxConcurrentSequences=32)
    raw["services"][0]["retries"] = {"attempts": 1}
    assert "services[svc].retries: not available for an LLM service" in refused(raw)
    raw = stack(maxConcurrentSequences=32)
    raw["services"][0]["versions"][0].pop("llm")
    raw["services"][0]["llmRouting"] = {"failureMode": "FailClose"}
    assert "services[svc].llmRouting: the service has no version with `llm.openai`" in refused(raw)


@pytest.mark.parametrize("mode", ["FailOpen", "FailClose"])
def test_the_failure_mode_reaches_every_versions_pool(mode):
    raw = stack(maxConcurrentSequences=32)
    raw["services"][0]["llmRouting"] = {"failureMode": mode}
    service = parse_settings(raw, STACK_FILE).services[0]
    values = endpoint_picker_values(service, service.versions[0])
    assert values["router"]["inferencePool"] == {"failureMode": mode}
    assert values["router"]["modelServers"]["matchLabels"] == {"app": "svc", "version": "v1"}


def test_a_version_at_weight_zero_gets_no_backend():
    raw = stack(maxConcurrentSequences=32)
    second = dict(raw["services"][0]["versions"][0], name="v2", weight=0)
    raw["services"][0]["versions"].append(second)
    service = parse_settings(raw, STACK_FILE).services[0]
    assert [b["name"] for b in http_route_spec(service)["rules"][0]["backendRefs"]] == ["svc-v1"]


@pytest.mark.parametrize("weights, order", [
    ((90, 10), ["svc-v2", "svc-v1"]),
    ((10, 90), ["svc-v1", "svc-v2"]),
    ((50, 50), ["svc-v2", "svc-v1"]),
    ((10, 80, 10), ["svc-v3", "svc-v1", "svc-v2"]),
    ((0, 70, 30), ["svc-v3", "svc-v2"]),
])
def test_the_pools_go_in_by_weight_with_the_highest_and_first_listed_last(weights, order):
    """Istio 1.30.3 calls the last backendRef's picker for the whole rule (llm_routing.picker_order)."""
    raw = stack(maxConcurrentSequences=32)
    first = raw["services"][0]["versions"][0]
    raw["services"][0]["versions"] = [dict(first, name=f"v{i + 1}", weight=w) for i, w in enumerate(weights)]
    raw["cluster"]["nodeGroups"][1]["maxNodes"] = 8  # a GPU for each version's replica and the spare slot
    service = parse_settings(raw, STACK_FILE).services[0]
    assert [b["name"] for b in http_route_spec(service)["rules"][0]["backendRefs"]] == order

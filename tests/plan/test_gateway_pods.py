"""The pods istiod deploys for a Gateway fall under no selector meant for other pods
(platformctl/gateway_pods.py), in every example stack, and the invariant names what does."""

from __future__ import annotations

import copy

import pytest

from platformctl import gateway_pods
from platformctl.invariants import plan_resources
from tests.conftest import STACKS, stack_plan

GATEWAY = "kubernetes:gateway.networking.k8s.io/v1:Gateway"


@pytest.mark.parametrize("stack", STACKS)
def test_no_selector_takes_in_the_pods_istiod_deploys_for_a_gateway(stack):
    assert gateway_pods.violations(plan_resources(stack_plan(stack))) == []


def test_the_llm_gateway_pods_carry_istiods_labels_and_none_of_the_workloads():
    (gateway, labels), = gateway_pods.gateway_pods(plan_resources(stack_plan("acme-prod")))
    assert labels["gateway.networking.k8s.io/gateway-name"] == "llm-chat"
    assert labels["service.istio.io/canonical-name"] == "llm-chat-istio"
    assert "app" not in labels and "version" not in labels


def test_a_workload_label_on_the_gateway_is_named_with_every_selector_it_brings_in():
    resources = copy.deepcopy(plan_resources(stack_plan("acme-prod")))
    (gateway,) = [r for r in resources if r["type"] == GATEWAY]
    gateway["inputs"]["metadata"]["labels"]["app"] = "llm-chat"
    found = gateway_pods.violations(resources)
    for kind in ("NetworkPolicy", "AuthorizationPolicy", "PeerAuthentication", "RequestAuthentication",
                 "PodMonitor", "Service"):
        assert f"{kind} llm-chat/llm-chat selects the pods istiod deploys for Gateway llm-chat/llm-chat" in "\n".join(found)
    assert ("Gateway llm-chat/llm-chat: NetworkPolicy llm-chat/llm-chat isolates its pods and admits nothing on its "
            "listener port 443") in found
    # The mesh-wide Envoy stats PodMonitor selects them by a label istiod sets on every proxy: meant for them.
    assert not any(f.startswith("PodMonitor monitoring/envoy-stats") for f in found)


def test_infrastructure_labels_replace_the_copy():
    gateway = {"metadata": {"name": "g", "labels": {"app": "x"}},
               "spec": {"gatewayClassName": "istio", "infrastructure": {"labels": {"team": "a",
                                                                                  "gateway.networking.k8s.io/x": "y"}}}}
    labels = gateway_pods.pod_labels(gateway)
    assert labels["team"] == "a" and "app" not in labels and "gateway.networking.k8s.io/x" not in labels
    assert "app" not in gateway_pods.pod_labels({**gateway, "spec": {"gatewayClassName": "istio"}}, copy_labels=False)

"""Who reaches a classic Triton service's pods on Triton's HTTP and gRPC ports: the ingress
gateway's pods, as the gateway chart really labels them (a real `helm template` of the vendored
chart), and no other pod of the ingress namespace; Prometheus still reaches the metrics port.
For every example stack and for examples/triton-on-existing-mesh, whose cluster's own gateway
the program does not install (its NetworkPolicy admits the chart's default labels)."""

from __future__ import annotations

import pytest

from inference_platform.core import endpoints as ep
from inference_platform.core import versions
from inference_platform.serving.triton import GRPC_PORT, HTTP_PORT, TRITON_METRICS_PORT
from platformctl.engine import stack_settings
from tests.conftest import ROOT, STACKS, stack_plan
from tests.plan.test_examples import example_plan, objects
from tests.support import helm
from platformctl.network_reach import Pod, admits

TRITON_PORTS = (HTTP_PORT, GRPC_PORT)
# A pod of the ingress namespace with a label of its own, as a debugging or sidecar-less tool would run.
STRANGER_LABELS = {"app": "debug"}


def _pod_labels(objects_: list[dict]) -> dict[str, str]:
    (deployment,) = [o for o in objects_ if o["kind"] == "Deployment"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    # The pods the Deployment owns are the ones its selector picks.
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    return labels


def _release_pods(plan, release_name: str) -> Pod:
    (release,) = [r for r in helm.releases(plan) if r["name"] == release_name]
    return Pod(release["namespace"], _pod_labels(helm.helm_template(release, include_crds=False)))


def _classic_triton_pods(stack: str, plan) -> list[tuple[str, Pod]]:
    """(name, pod) of every Deployment of a classic Triton service: the stack's services that are
    not LLM-routed and its ensemble graphs (each one TritonService)."""
    settings = stack_settings(ROOT / "stacks" / f"Pulumi.{stack}.yaml")
    served = [(s.name, s.k8s_namespace) for s in settings.services if not s.llm_routed]
    served += [(g.name, g.k8s_namespace) for g in settings.graphs if g.placement == "ensemble"]
    return [(d["metadata"]["name"], Pod(ns, d["spec"]["template"]["metadata"]["labels"]))
            for name, ns in served for d in objects(plan, "Deployment")
            if d["metadata"].get("namespace") == ns and d["spec"]["template"]["metadata"]["labels"].get("app") == name]


CLASSIC = [(stack, name, pod) for stack in STACKS for name, pod in _classic_triton_pods(stack, stack_plan(stack))]


@pytest.mark.parametrize("stack,name,triton", CLASSIC, ids=[f"{s}-{n}" for s, n, _ in CLASSIC])
def test_only_the_ingress_gateway_pods_of_the_ingress_namespace_reach_tritons_ports(stack, name, triton, reference):
    plan = stack_plan(stack)
    policies = objects(plan, "NetworkPolicy")
    gateway = _release_pods(plan, ep.GATEWAY_RELEASE)
    istiod = _release_pods(plan, ep.ISTIOD_RELEASE)
    assert gateway.namespace == istiod.namespace == ep.ISTIO_NAMESPACE
    for port in TRITON_PORTS:
        assert admits(policies, gateway, triton, port), f"{name}:{port} refuses the ingress gateway"
        for other in (istiod, Pod(ep.ISTIO_NAMESPACE, STRANGER_LABELS)):
            assert not admits(policies, other, triton, port), f"{name}:{port} admits {other.labels} of the ingress namespace"
    prometheus = Pod(ep.MONITORING_NAMESPACE, {"app.kubernetes.io/name": "prometheus"})
    assert admits(policies, prometheus, triton, TRITON_METRICS_PORT)
    assert not admits(policies, prometheus, triton, HTTP_PORT)


def test_the_service_alone_admits_the_gateway_chart_pods_of_its_ingress_namespace_and_no_other(reference):
    """examples/triton-on-existing-mesh names the cluster's ingress namespace only: its policy
    admits the pods the gateway chart renders there for a release named istio-ingressgateway
    (the labels the example gives `mesh.ingress_pod_labels`, their default)."""
    plan = example_plan("triton-on-existing-mesh")
    policies = objects(plan, "NetworkPolicy")
    (policy,) = [p for p in policies if p["metadata"]["name"] == "detector"]
    namespace = policy["metadata"]["namespace"]
    chart = helm.helm_template({"name": ep.GATEWAY_RELEASE, "chart": versions.ISTIO_GATEWAY.name,
                                "version": versions.ISTIO_GATEWAY.version, "namespace": "istio-ingress", "values": {}},
                               include_crds=False)
    gateway = Pod("istio-ingress", _pod_labels(chart))
    triton = Pod(namespace, policy["spec"]["podSelector"]["matchLabels"])
    for port in TRITON_PORTS:
        assert admits(policies, gateway, triton, port)
        assert not admits(policies, Pod("istio-ingress", STRANGER_LABELS), triton, port)
        assert not admits(policies, Pod(ep.ISTIO_NAMESPACE, gateway.labels), triton, port)

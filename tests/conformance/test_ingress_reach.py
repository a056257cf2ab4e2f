"""Who reaches a classic Triton service's pods on Triton's HTTP and gRPC ports, and a Ray
graph's pods on Serve's: the ingress gateway's pods, as the gateway chart really labels them (a
real `helm template` of the vendored chart), and no other pod of the ingress namespace;
Prometheus still reaches the metrics port, and on a Ray graph the KubeRay operator's pods (as
its chart labels them) and no other pod of its namespace the dashboard. For every example stack
and for examples/triton-on-existing-mesh, whose cluster's own gateway the program does not
install (its NetworkPolicy admits the chart's default labels)."""

from __future__ import annotations

import pytest

from inference_platform.core import endpoints as ep
from inference_platform.core import versions
from inference_platform.serving.graphs import DASHBOARD_PORT, KUBERAY_NAMESPACE, METRICS_PORT, SERVE_PORT
from inference_platform.serving.triton import GRPC_PORT, HTTP_PORT, TRITON_METRICS_PORT
from platformctl.engine import stack_settings
from platformctl.network_reach import Pod, admits
from tests.conftest import ROOT, STACKS, stack_plan
from tests.plan.test_examples import example_plan, objects
from tests.support import helm

TRITON_PORTS = (HTTP_PORT, GRPC_PORT)
# A pod of the ingress namespace with a label of its own, as a debugging or sidecar-less tool would run.
STRANGER_LABELS = {"app": "debug"}
PROMETHEUS = Pod(ep.MONITORING_NAMESPACE, {"app.kubernetes.io/name": "prometheus"})


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


def _ray_graph_pods(plan) -> list[tuple[str, Pod]]:
    """(name, pod) of the head and of each worker group of every RayService, with the labels its
    pod templates give them (KubeRay adds its ray.io/* labels beside them, ray-operator v1.7.0
    common/pod.go labelPod; the policies select the platform's)."""
    pods = []
    for service in objects(plan, "RayService"):
        cluster = service["spec"]["rayClusterConfig"]
        groups = [("head", cluster["headGroupSpec"]), *((g["groupName"], g) for g in cluster["workerGroupSpecs"])]
        pods += [(f"{service['metadata']['name']}-{group}",
                  Pod(service["metadata"]["namespace"], spec["template"]["metadata"]["labels"])) for group, spec in groups]
    return pods


CLASSIC = [(stack, name, pod) for stack in STACKS for name, pod in _classic_triton_pods(stack, stack_plan(stack))]
RAY = [(stack, name, pod) for stack in STACKS for name, pod in _ray_graph_pods(stack_plan(stack))]


def _only_the_ingress_gateway_reaches(plan, policies: list[dict], name: str, target: Pod, ports: tuple[int, ...]) -> None:
    gateway = _release_pods(plan, ep.GATEWAY_RELEASE)
    istiod = _release_pods(plan, ep.ISTIOD_RELEASE)
    assert gateway.namespace == istiod.namespace == ep.ISTIO_NAMESPACE
    for port in ports:
        assert admits(policies, gateway, target, port), f"{name}:{port} refuses the ingress gateway"
        for other in (istiod, Pod(ep.ISTIO_NAMESPACE, STRANGER_LABELS)):
            assert not admits(policies, other, target, port), f"{name}:{port} admits {other.labels} of the ingress namespace"


@pytest.mark.parametrize("stack,name,triton", CLASSIC, ids=[f"{s}-{n}" for s, n, _ in CLASSIC])
def test_only_the_ingress_gateway_pods_of_the_ingress_namespace_reach_tritons_ports(stack, name, triton, reference):
    plan = stack_plan(stack)
    policies = objects(plan, "NetworkPolicy")
    _only_the_ingress_gateway_reaches(plan, policies, name, triton, TRITON_PORTS)
    assert admits(policies, PROMETHEUS, triton, TRITON_METRICS_PORT)
    assert not admits(policies, PROMETHEUS, triton, HTTP_PORT)


def test_every_stack_with_a_ray_graph_has_its_ray_pods_checked():
    """The parametrised check below covers the head and every step's workers of each Ray graph."""
    expected = {(stack, f"{g.name}-{group}") for stack in STACKS
                for g in stack_settings(ROOT / "stacks" / f"Pulumi.{stack}.yaml").graphs if g.placement == "ray"
                for group in ("head", *(s.name for s in g.steps))}
    assert expected and {(stack, name) for stack, name, _ in RAY} == expected


@pytest.mark.parametrize("stack,name,ray", RAY, ids=[f"{s}-{n}" for s, n, _ in RAY])
def test_only_the_ingress_gateway_and_kuberay_operator_pods_reach_a_ray_graphs_serve_and_dashboard_ports(
        stack, name, ray, reference):
    plan = stack_plan(stack)
    policies = objects(plan, "NetworkPolicy")
    _only_the_ingress_gateway_reaches(plan, policies, name, ray, (SERVE_PORT,))
    operator = _release_pods(plan, versions.KUBERAY_OPERATOR.name)
    assert operator.namespace == KUBERAY_NAMESPACE
    for port in (DASHBOARD_PORT, SERVE_PORT):
        assert admits(policies, operator, ray, port), f"{name}:{port} refuses the KubeRay operator"
        stranger = Pod(KUBERAY_NAMESPACE, STRANGER_LABELS)
        assert not admits(policies, stranger, ray, port), f"{name}:{port} admits {stranger.labels} of {KUBERAY_NAMESPACE}"
    assert admits(policies, PROMETHEUS, ray, METRICS_PORT)
    assert not admits(policies, PROMETHEUS, ray, SERVE_PORT)


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

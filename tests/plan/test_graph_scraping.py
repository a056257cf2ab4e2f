"""How Prometheus reaches a graph on Ray: the PodMonitor that scrapes every Ray pod, the port Ray
exports on, the NetworkPolicy that lets the monitoring namespace in, and the deployment names
the graph alerts select."""

from __future__ import annotations

import pytest

from graph_app.spec import parse
from inference_platform.core import endpoints as ep
from inference_platform.observability.graph_alerts import serve_deployment
from inference_platform.serving import graphs
from platformctl.engine import stack_settings
from platformctl.plan import is_k8s_object, manifest
from tests.conftest import stack_plan

STACK = "studio-dev"
[GRAPH] = [g for g in stack_settings(STACK).graphs if g.placement == "ray"]
# KubeRay v1.7.0 ray-operator/controllers/ray/utils/constant.go: MetricsPortName "metrics",
# DefaultMetricsPort 8080; common/pod.go adds that container port to the head and to every
# worker whose Ray container names none (DefaultHeadPodTemplate, DefaultWorkerPodTemplate).
KUBERAY_METRICS_PORT_NAME, KUBERAY_DEFAULT_METRICS_PORT = "metrics", 8080


@pytest.fixture(scope="module")
def graph_objects() -> dict[str, dict]:
    out = {}
    for r in stack_plan(STACK).resources:
        if is_k8s_object(r):
            m = manifest(r)
            if (m["metadata"].get("namespace"), m["metadata"].get("name")) == (GRAPH.k8s_namespace, GRAPH.name):
                assert m["kind"] not in out
                out[m["kind"]] = m
    return out


def test_every_ray_pod_is_scraped_where_ray_exports(graph_objects):
    """The PodMonitor selects the head and every worker by the graph's label and scrapes the port
    named `metrics`: the head names it, and KubeRay adds it (8080) to each worker, so Ray must
    export on 8080 on every node."""
    spec = graph_objects["PodMonitor"]["spec"]
    assert spec["selector"]["matchLabels"] == {graphs.GRAPH_LABEL: GRAPH.name}
    assert [e["port"] for e in spec["podMetricsEndpoints"]] == [KUBERAY_METRICS_PORT_NAME, graphs.STEP_METRICS_PORT_NAME]
    cluster = graph_objects["RayService"]["spec"]["rayClusterConfig"]
    groups = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
    for group in groups:
        assert group["template"]["metadata"]["labels"][graphs.GRAPH_LABEL] == GRAPH.name
        assert group["rayStartParams"]["metrics-export-port"] == str(KUBERAY_DEFAULT_METRICS_PORT)
        named = [p for c in group["template"]["spec"]["containers"] for p in c.get("ports", [])
                 if p["name"] == KUBERAY_METRICS_PORT_NAME]
        assert named in ([], [{"name": KUBERAY_METRICS_PORT_NAME, "containerPort": KUBERAY_DEFAULT_METRICS_PORT}])
    assert len(groups) == 1 + len(GRAPH.steps)


def test_the_monitoring_namespace_may_reach_the_metrics_port(graph_objects):
    ingress = graph_objects["NetworkPolicy"]["spec"]["ingress"]
    monitoring = [r for r in ingress if r["from"] == [{"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": ep.MONITORING_NAMESPACE}}}]]
    assert any({"protocol": "TCP", "port": KUBERAY_DEFAULT_METRICS_PORT} in r["ports"] for r in monitoring)


def test_graph_alerts_select_the_deployments_graph_app_runs():
    args = graphs.serve_config(GRAPH, {s.name: f"/models/{s.model}" for s in GRAPH.steps})["applications"][0]
    assert args["name"] == GRAPH.name  # Ray's `application` label
    spec = parse(args["args"])
    assert [serve_deployment(s) for s in GRAPH.steps] == [s.deployment for s in spec.steps]
    assert {d["name"] for d in args["deployments"]} >= {serve_deployment(s) for s in GRAPH.steps}


def test_each_step_worker_s_triton_metrics_are_scraped_through_mesh_and_network_policy(graph_objects):
    """Step replicas serve their in-process Triton's metrics on 8002 (graph_app/triton.py): every
    worker names that port, the PodMonitor scrapes it, the NetworkPolicy admits the monitoring
    namespace to it, mTLS is PERMISSIVE there and the AuthorizationPolicy lets the scrape in."""
    port = graphs.STEP_METRICS_PORT
    cluster = graph_objects["RayService"]["spec"]["rayClusterConfig"]
    for group in cluster["workerGroupSpecs"]:
        ports = [p for c in group["template"]["spec"]["containers"] for p in c.get("ports", [])]
        assert {"name": graphs.STEP_METRICS_PORT_NAME, "containerPort": port} in ports
    monitoring = [r for r in graph_objects["NetworkPolicy"]["spec"]["ingress"] if r["from"] == [{"namespaceSelector": {
        "matchLabels": {"kubernetes.io/metadata.name": ep.MONITORING_NAMESPACE}}}]]
    assert any({"protocol": "TCP", "port": port} in r["ports"] for r in monitoring)
    assert graph_objects["PeerAuthentication"]["spec"]["portLevelMtls"][str(port)] == {"mode": "PERMISSIVE"}
    open_rules = [r for r in graph_objects["AuthorizationPolicy"]["spec"]["rules"] if "from" not in r]
    assert any(str(port) in r["to"][0]["operation"]["ports"] for r in open_rules)

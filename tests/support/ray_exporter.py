"""Ray Serve's series for the live Prometheus: a graph on Ray as its pods export them, healthy.

The head pod runs Serve's controller (application and deployment statuses, target and healthy
replicas) and an HTTP proxy; each step's worker pod runs the step's replica, and the first one
also the graph's ingress (`graph`), which calls the steps and so reports their queues. Names,
labels and buckets as Ray 2.60.0 exports them (tests/catalogues/ray-serve.txt).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from inference_platform.core import versions
from inference_platform.observability.graph_alerts import serve_deployment
from inference_platform.settings.graphs import Graph

if TYPE_CHECKING:
    from tests.support.promstack import Exporter

INGRESS = "graph"
# ray/serve/_private/constants.py DEFAULT_LATENCY_BUCKET_MS, as the exporter writes them (le="1.0").
LATENCY_BUCKETS_MS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 300.0, 400.0, 500.0, 1000.0, 2000.0,
                      5000.0, 10000.0, 60000.0, 120000.0, 300000.0, 600000.0, "+Inf")
RUNNING = 6  # serve_application_status RUNNING, serve_deployment_status HEALTHY
REQUESTS_PER_SCRAPE = 20
ERRORS_PER_SCRAPE = 0.1  # 0.5 % of a step's requests: below any failure ratio
STEP_LATENCY_MS = 80


def _step(name: str, model: str, inputs: dict, outputs: dict, replicas: dict) -> dict:
    return {"name": name, "model": model, "image": "registry.example.com/triton-ray:25.01",
            "model_repository": {"cache": "fileShare", "path": model}, "gpu": {"group": "gpu"}, "replicas": replicas,
            "inputs": inputs, "outputs": outputs}


# The graph the live Prometheus sees when its stack runs none on Ray: two steps, one autoscaled.
EXAMPLE_GRAPH = Graph.model_validate({
    "name": "speech", "hosts": ["speech.example.com"], "placement": "ray", "timeout_seconds": 60,
    "inputs": [{"name": "AUDIO", "dims": [-1]}], "outputs": [{"name": "IMAGE", "data_type": "TYPE_UINT8", "dims": [-1]}],
    "steps": [_step("transcribe", "whisper", {"AUDIO": "AUDIO"}, {"TEXT": "TEXT"}, {"min": 1, "max": 3}),
              _step("draw", "diffusion", {"PROMPT": "TEXT"}, {"IMAGE": "IMAGE"}, {"min": 2, "max": 2})],
})


@dataclass(frozen=True)
class RayPod:
    namespace: str
    name: str
    container: str
    step: str = ""  # the step whose replica runs here; "" on the head


def ray_pods(graph: Graph) -> list[RayPod]:
    ns = graph.k8s_namespace
    pods = [RayPod(ns, f"{graph.name}-raycluster-head", "ray-head")]
    return pods + [RayPod(ns, f"{graph.name}-raycluster-{s.name}-worker-0", "ray-worker", s.name) for s in graph.steps]


def _ids(graph: Graph, pod: RayPod) -> dict[str, str]:
    """The labels every series of a Ray node carries (Serve's own come after)."""
    return {"Component": "core_worker", "NodeAddress": f"{pod.name}.{graph.name}-ray", "SessionName": "session_1",
            "Version": versions.RAY_VERSION, "WorkerId": f"{abs(hash(pod.name)) % 10**8:08d}", "application": graph.name}


def _labels(**labels) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def _replica_series(exp: Exporter, graph: Graph, pod: RayPod, deployment: str) -> list[str]:
    ids = {**_ids(graph, pod), "deployment": deployment, "replica": f"{deployment}-r0"}
    requests = REQUESTS_PER_SCRAPE * exp.rng.uniform(0.8, 1.2)
    request = {**ids, "route": "/"}
    lines = [
        f"ray_serve_deployment_request_counter_total{_labels(**request)} "
        f"{exp._count('ray-ok' + pod.name + deployment, requests)}",
        f"ray_serve_deployment_error_counter_total{_labels(**request, exception_type='ValueError')} "
        f"{exp._count('ray-err' + pod.name + deployment, ERRORS_PER_SCRAPE)}",
        f"ray_serve_replica_processing_queries{_labels(**ids)} {exp._value('ray_serve_replica_processing_queries', pod.name + deployment, 2)}",
    ]
    return lines + exp._histogram("ray_serve_deployment_processing_latency_ms", request, LATENCY_BUCKETS_MS,
                                  requests, STEP_LATENCY_MS)


def _controller_series(graph: Graph, pod: RayPod) -> list[str]:
    ids = _ids(graph, pod)
    lines = [f"ray_serve_application_status{_labels(**ids)} {RUNNING}"]
    replicas = {serve_deployment(s): s.replicas.min for s in graph.steps} | {INGRESS: 1}
    for deployment, count in replicas.items():
        lines.append(f"ray_serve_deployment_status{_labels(**ids, deployment=deployment)} {RUNNING}")
        lines.append(f"ray_serve_autoscaling_target_replicas{_labels(**ids, deployment=deployment)} {count}")
        for r in range(count):
            lines.append(f"ray_serve_deployment_replica_healthy{_labels(**ids, deployment=deployment, replica=f'{deployment}-r{r}')} 1")
    return lines


def _queues(exp: Exporter, graph: Graph, pod: RayPod, deployments: list[str]) -> list[str]:
    """What a caller's router holds for the deployments it calls (tagged with the callee)."""
    return [f"ray_serve_deployment_queued_queries{_labels(**_ids(graph, pod), deployment=d, handle='h0', actor_id='a0')} "
            f"{exp._value('ray_serve_deployment_queued_queries', pod.name + d, 1)}" for d in deployments]


def _proxy_series(exp: Exporter, graph: Graph, pod: RayPod) -> list[str]:
    ids = {**_ids(graph, pod), "route": "/", "method": "POST"}
    lines = []
    for code, share in (("200", 1.0), ("500", 0.01)):
        labels = {**ids, "status_code": code}
        n = REQUESTS_PER_SCRAPE * share
        lines.append(f"ray_serve_num_http_requests_total{_labels(**labels)} {exp._count('ray-http' + code, n)}")
        lines += exp._histogram("ray_serve_http_request_latency_ms", labels, LATENCY_BUCKETS_MS, n,
                                STEP_LATENCY_MS * len(graph.steps))
    return lines


def ray_series(exp: Exporter, graph: Graph, pod_name: str) -> list[str]:
    pod = next(p for p in ray_pods(graph) if p.name == pod_name)
    if not pod.step:
        return _controller_series(graph, pod) + _proxy_series(exp, graph, pod) + _queues(exp, graph, pod, [INGRESS])
    step = next(s for s in graph.steps if s.name == pod.step)
    lines = _replica_series(exp, graph, pod, serve_deployment(step))
    if step == graph.steps[0]:
        lines += _replica_series(exp, graph, pod, INGRESS)
        lines += _queues(exp, graph, pod, [serve_deployment(s) for s in graph.steps])
    return lines

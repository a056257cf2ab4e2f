"""A real Prometheus on loopback scraping a small exporter of the platform's real metrics.

The exporter serves every metric of the reference catalogues (Triton, DCGM, Istio,
kube-state-metrics) with the labels the real exporters attach, for the pods,
GPUs and nodes of a stack, with counters that grow on every scrape. Prometheus
scrapes it the way the platform's monitors do (target labels, honor_labels) and
evaluates the platform's own rule groups, so dashboard queries see what they would
see in a cluster.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from inference_platform.observability import alerts
from inference_platform.observability.metrics import QUEUE_TIME_METRIC
from inference_platform.settings.stack import Settings
from tests.conftest import observability_inputs
from tests.support.controller_exporter import controller_series
from tests.support.metric_catalogue import catalogue, llm_families
from tests.support.netutil import free_port
from tests.support.ray_exporter import EXAMPLE_GRAPH, ray_pods, ray_series
from tests.support.training_exporter import JOBSET_NAMESPACE, KUEUE_NAMESPACE, dcgm_series, ksm_series

SCRAPE_SECONDS = 1
DCGM_NAMESPACE = "gpu-operator"
PLACEHOLDER_NAMESPACE = "gpu-coldstart"
ISTIO_BUCKETS = (5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, "+Inf")


@dataclass(frozen=True)
class ModelLoad:
    """One model a Triton pod serves: requests per scrape and what each request costs."""

    name: str
    requests: float = 20
    queue_us: float = 1500
    compute_us: float = 6000


PLAIN_MODELS = (ModelLoad("resnet50"), ModelLoad("densenet"))
# An ensemble as Triton reports it: every step counts each request on its own series, and
# the ensemble's own queue time ends when its first step is enqueued (near zero).
ENSEMBLE_MODELS = (
    ModelLoad("pipeline", queue_us=5, compute_us=50000),
    ModelLoad("preprocess", queue_us=200, compute_us=1000),
    ModelLoad("bottleneck", queue_us=40000, compute_us=8000),
    ModelLoad("postprocess", queue_us=100, compute_us=500),
)
# The models an LLM backend's model repository serves (the TensorRT-LLM backend's
# all_models/inflight_batcher_llm layout; the vLLM backend's sample vllm_model).
LLM_MODELS = {
    "tensorrtllm": (ModelLoad("ensemble", queue_us=10, compute_us=900000), ModelLoad("preprocessing", queue_us=100),
                    ModelLoad("tensorrt_llm", queue_us=3000, compute_us=880000), ModelLoad("postprocessing", queue_us=100)),
    "vllm": (ModelLoad("vllm_model", queue_us=2000, compute_us=700000),),
}
FIRST_RESPONSE_BUCKETS_MS = (100, 500, 2000, 5000, "+Inf")
TOKEN_LEN_BUCKETS = (10, 50, 100, 500, 1000, "+Inf")
# triton-inference-server/vllm_backend r25.01 src/utils/metrics.py: time to first token, time per
# output token, end-to-end latency.
VLLM_SECONDS_BUCKETS = {
    "time_to_first_token_seconds": (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, "+Inf"),
    "time_per_output_token_seconds": (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, "+Inf"),
    "e2e_request_latency_seconds": (1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, "+Inf"),
}
VLLM_TOKEN_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, "+Inf")


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    app: str
    version: str
    node: str
    phase: str = "Running"
    priority_class: str = ""
    gpu_resource: str = "nvidia_com_gpu"
    models: tuple[ModelLoad, ...] = PLAIN_MODELS
    llm_backend: str = ""


class Topology:
    """Pods, nodes and GPUs of a stack, as a cluster running it would have them."""

    def __init__(self, settings: Settings):
        self.nodes: dict[str, str] = {}  # node -> group
        self.gpus: list[tuple[str, int, str, str]] = []  # node, index, model, MIG profile ("" if none)
        for group in settings.cluster.node_groups:
            for i in range(max(group.min_nodes, 1)):
                node = f"{group.name}-node-{i}"
                self.nodes[node] = group.name
                if group.gpu is not None:
                    mig = group.gpu.sharing.mig_profile if group.gpu.sharing.mode == "mig" else ""
                    profile = mig.removeprefix("all-") if isinstance(mig, str) else ""
                    for g in range(group.gpu.per_node):
                        self.gpus.append((node, g, group.gpu.model, profile))
        self.pods: list[Pod] = []
        for svc in settings.services:
            for v in svc.versions:
                node = next(n for n, g in self.nodes.items() if g == v.gpu.group)
                for r in range(2):
                    self.pods.append(Pod(svc.k8s_namespace, f"{svc.name}-{v.name}-{r}", svc.name, v.name, node))
        first = self.pods[0]
        gpu_node = first.node
        # One replica waiting for a GPU, one running placeholder, one preempted placeholder.
        self.pods.append(Pod(first.namespace, f"{first.app}-{first.version}-pending", first.app, first.version, "", "Pending"))
        self.pods.append(Pod(PLACEHOLDER_NAMESPACE, "placeholder-0", "", "", gpu_node, "Running", alerts.PLACEHOLDER_PRIORITY_CLASS))
        self.pods.append(Pod(PLACEHOLDER_NAMESPACE, "placeholder-1", "", "", "", "Pending", alerts.PLACEHOLDER_PRIORITY_CLASS))
        # Beyond the stack: a pod serving an ensemble, and one pod per LLM backend.
        self.ensemble_pod = Pod("graph", "graph-v1-0", "graph", "v1", gpu_node, models=ENSEMBLE_MODELS)
        self.pods.append(self.ensemble_pod)
        for i, (backend, models) in enumerate(LLM_MODELS.items()):
            self.pods.append(Pod("chat", f"chat-v{i + 1}-0", "chat", f"v{i + 1}", gpu_node, models=models, llm_backend=backend))
        # The stack's graphs on Ray, or one beyond the stack: their Ray pods export Serve's metrics.
        self.ray_graphs = [g for g in settings.graphs if g.placement == "ray"] or [EXAMPLE_GRAPH]

    @property
    def triton_pods(self) -> list[Pod]:
        return [p for p in self.pods if p.app and p.phase == "Running"]


def _labels(**labels: Any) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


class Exporter:
    """Serves /triton/<ns>/<pod>, /dcgm/<node>, /envoy/<ns>/<pod>, /gateway, /ksm, /ray/..., /kueue, /jobset, /llm-d-router-epp and /dcgm-training."""

    def __init__(self, topology: Topology):
        self.topology = topology
        self.counters: dict[str, float] = {}
        self.lock = threading.Lock()
        self.rng = random.Random(7)
        self.types = {name: typ for names in catalogue().values() for name, typ in names.items()}

    def _value(self, name: str, labels: str, step: float) -> float:
        """Counters grow by about `step` per scrape; gauges wander around `step`."""
        key = name + labels
        if self.types.get(name) == "gauge":
            return round(step * self.rng.uniform(0.6, 1.0), 3)
        self.counters[key] = self.counters.get(key, 0.0) + step * self.rng.uniform(0.5, 1.5)
        return round(self.counters[key], 3)

    def _count(self, key: str, step: float) -> float:
        self.counters[key] = self.counters.get(key, 0.0) + step
        return round(self.counters[key], 3)

    def _histogram(self, name: str, labels: dict[str, Any], buckets: tuple, observations: float, typical: float) -> list[str]:
        """A histogram's series; observations spread around `typical` (an exponential CDF)."""
        count = self._count(f"{name}_count{_labels(**labels)}", observations)
        total = self._count(f"{name}_sum{_labels(**labels)}", observations * typical)
        lines = []
        for le in buckets:
            share = 1.0 if le == "+Inf" else 1 - math.exp(-le / typical)
            lines.append(f"{name}_bucket{_labels(**labels, le=le)} {round(count * share, 3)}")
        return lines + [f"{name}_sum{_labels(**labels)} {total}", f"{name}_count{_labels(**labels)} {count}"]

    def _model_series(self, pod: str, model: ModelLoad) -> list[str]:
        """Triton's per-model counters. Durations grow by exactly requests x time per request,
        so a rate ratio over any window is that time per request."""
        n = model.requests * self.rng.uniform(0.5, 1.5)
        per_request = {
            "nv_inference_request_success": 1, "nv_inference_count": 2, "nv_inference_exec_count": 0.5,
            "nv_inference_queue_duration_us": model.queue_us, "nv_inference_compute_input_duration_us": 300,
            "nv_inference_compute_infer_duration_us": model.compute_us, "nv_inference_compute_output_duration_us": 200,
            "nv_inference_request_duration_us": model.queue_us + model.compute_us + 500,
        }
        lines = []
        for name in catalogue()["triton"]:
            if not name.startswith("nv_inference_"):
                continue
            extra = {"reason": "REJECTED"} if name == "nv_inference_request_failure" else {}
            labels = _labels(model=model.name, version="1", **extra)
            if name in per_request:
                value = self._count(pod + name + labels, n * per_request[name])
            else:
                value = self._value(name, pod + labels, 3 if name == "nv_inference_pending_request_count" else 1)
            lines.append(f"{name}{labels} {value}")
        return lines

    def _llm_series(self, pod: Pod) -> list[str]:
        """What the pod's LLM backend exports, with the labels and label values it uses."""
        engine = pod.models[-1] if pod.llm_backend == "vllm" else next(m for m in pod.models if m.name == "tensorrt_llm")
        ids = {"model": engine.name, "version": "1"}
        lines = []
        # Streaming LLM models are decoupled: Triton's first-response histogram covers them
        # (with --metrics-config histogram_latencies=true).
        for model in pod.models:
            lines += self._histogram("nv_inference_first_response_histogram_ms", {"model": model.name, "version": "1"},
                                     FIRST_RESPONSE_BUCKETS_MS, model.requests, 180)
        if pod.llm_backend == "tensorrtllm":
            for family in llm_families("tensorrtllm"):
                base = family.name.removesuffix("_bucket")
                category = next(label for label in family.labels if label not in ("model", "version", "le"))
                for value in family.values:
                    labels = {**ids, category: value}
                    if family.type == "histogram":
                        lines += self._histogram(base, labels, TOKEN_LEN_BUCKETS, engine.requests, 120)
                    elif family.name == "nv_trt_llm_kv_cache_block_metrics":
                        blocks = {"max": 6239, "used": 4100, "free": 2139, "tokens_per": 64, "reused": 300}[value]
                        lines.append(f"{family.name}{_labels(**labels)} {blocks}")
                    else:
                        lines.append(f"{family.name}{_labels(**labels)} {self._value(family.name, pod.name + _labels(**labels), 5)}")
        else:
            typical = {"time_to_first_token_seconds": 0.12, "time_per_output_token_seconds": 0.025,
                       "e2e_request_latency_seconds": 3.2, "request_prompt_tokens": 400,
                       "request_generation_tokens": 120, "request_params_n": 1}
            for family in llm_families("vllm"):
                base = family.name.removesuffix("_bucket")
                if family.type == "histogram":
                    kind = base.removeprefix("vllm:")
                    buckets = VLLM_SECONDS_BUCKETS.get(kind, VLLM_TOKEN_BUCKETS)
                    # One observation per generated token for the per-token histogram.
                    observations = engine.requests * (120 if kind == "time_per_output_token_seconds" else 1)
                    lines += self._histogram(base, ids, buckets, observations, typical[kind])
                else:
                    tokens = 400 if "prompt" in family.name else 120
                    lines.append(f"{family.name}{_labels(**ids)} {self._count(pod.name + family.name, engine.requests * tokens)}")
        return lines

    def triton(self, namespace: str, pod: str) -> list[str]:
        p = next(x for x in self.topology.pods if x.namespace == namespace and x.name == pod)
        lines = []
        for model in p.models:
            lines += self._model_series(pod, model)
        for name in catalogue()["triton"]:
            if name.startswith("nv_gpu_") or name == "nv_energy_consumption":
                labels = _labels(gpu_uuid=f"GPU-{abs(hash(pod)) % 10**8:08d}")
                lines.append(f"{name}{labels} {self._value(name, pod + labels, 0.5 if 'utilization' in name else 1e9)}")
            elif not name.startswith("nv_inference_"):
                lines.append(f"{name} {self._value(name, pod, 0.3 if 'utilization' in name else 1e9)}")
        if p.llm_backend:
            lines += self._llm_series(p)
        return lines

    def step_triton(self, graph_name: str, pod: str) -> list[str]:
        """A step worker's in-process Triton (graph_app/triton.py serve_metrics): its step's model."""
        graph = next(g for g in self.topology.ray_graphs if g.name == graph_name)
        step = next(p.step for p in ray_pods(graph) if p.name == pod)
        return self._model_series(pod, ModelLoad(next(s.model for s in graph.steps if s.name == step)))

    def dcgm(self, node: str) -> list[str]:
        lines = []
        gpus = [g for g in self.topology.gpus if g[0] == node]
        users = [p for p in self.topology.triton_pods if p.node == node]
        for node_name, index, model, profile in gpus:
            # A MIG GPU reports per instance; each instance serves one pod.
            instances = [(str(i), p) for i, p in enumerate(users)] if profile else [("", users[0] if users else None)]
            for inst, pod in instances:
                labels = {
                    "gpu": index, "UUID": f"GPU-{node_name}-{index}", "device": f"nvidia{index}",
                    "modelName": f"NVIDIA {model}", "Hostname": node_name, "DCGM_FI_DRIVER_VERSION": "595.45.04",
                    "container": "triton" if pod else "", "namespace": pod.namespace if pod else "",
                    "pod": pod.name if pod else "",
                }
                if profile:
                    labels.update({"GPU_I_PROFILE": profile, "GPU_I_ID": inst})
                text = _labels(**labels)
                for name in catalogue()["dcgm"]:
                    step = {"DCGM_FI_DEV_FB_USED": 30000, "DCGM_FI_DEV_FB_FREE": 50000, "DCGM_FI_DEV_XID_ERRORS": 0}.get(name, 50)
                    if name.startswith("DCGM_FI_PROF_"):
                        step = 0.7
                    lines.append(f"{name}{text} {self._value(name, text, step)}")
        return lines

    def envoy(self, namespace: str, pod: str) -> list[str]:
        p = next(x for x in self.topology.pods if x.name == pod)
        common = {
            "reporter": "destination", "source_workload": "istio-ingressgateway", "source_workload_namespace": "istio-system",
            "destination_workload": f"{p.app}-{p.version}", "destination_workload_namespace": namespace,
            "destination_service": f"{p.app}.{namespace}.svc.cluster.local", "destination_service_name": p.app,
            "destination_version": p.version, "request_protocol": "http", "connection_security_policy": "mutual_tls",
            # Istio leaves grpc_response_status empty on plain HTTP requests.
            "grpc_response_status": "",
        }
        lines = []
        for code, flags, share in (("200", "-", 1.0), ("503", "UF", 0.05), ("401", "-", 0.02)):
            c = dict(common, response_code=code, response_flags=flags)
            for name, typ in catalogue()["istio"].items():
                if typ == "histogram":
                    base = name.removesuffix("_bucket")
                    total = self._value(f"{base}_count", _labels(**c), 30 * share)
                    for le in ISTIO_BUCKETS:
                        frac = 1.0 if le == "+Inf" else min(1.0, (le / 400.0) ** 0.5)
                        lines.append(f"{name}{_labels(**c, le=le)} {round(total * frac, 3)}")
                    lines.append(f"{base}_sum{_labels(**c)} {round(total * 120, 3)}")
                    lines.append(f"{base}_count{_labels(**c)} {total}")
                elif name.startswith("istio_requests_total"):
                    lines.append(f"{name}{_labels(**c)} {self._value(name, _labels(**c), 30 * share)}")
                elif not name.endswith(("_sum", "_count")):
                    lines.append(f"{name}{_labels(**common)} {self._value(name, _labels(**common), 1000)}")
        return lines

    def gateway(self) -> list[str]:
        """The ingress gateway's source-side requests per service version, and the 503s it answers
        itself when a subset has no healthy host (response_flags UH, destination unknown)."""
        lines = []
        versions = sorted({(p.namespace, p.app, p.version) for p in self.topology.triton_pods})
        answered = [(ns, app, version, "200", "-", 30.0) for ns, app, version in versions]
        unhealthy = [(ns, app, "unknown", "503", "UH", 0.5) for ns, app in sorted({(ns, app) for ns, app, _ in versions})]
        for namespace, app, version, code, flags, step in answered + unhealthy:
            labels = _labels(
                reporter="source", source_workload=alerts.GATEWAY_WORKLOAD, source_workload_namespace="istio-system",
                destination_service=f"{app}.{namespace}.svc.cluster.local", destination_service_name=app,
                destination_workload_namespace="unknown" if version == "unknown" else namespace, destination_version=version, request_protocol="http",
                response_code=code, response_flags=flags, grpc_response_status="",
            )
            lines.append(f"istio_requests_total{labels} {self._value('istio_requests_total', 'gateway' + labels, step)}")
        return lines

    def ksm(self) -> list[str]:
        lines = []
        for node, group in self.topology.nodes.items():
            lines.append(f"kube_node_labels{_labels(node=node, label_inference_platform_node_group=group)} 1")
            if any(g[0] == node for g in self.topology.gpus):
                lines.append(f"kube_node_status_allocatable{_labels(node=node, resource='nvidia_com_gpu', unit='integer')} 1")
        for p in self.topology.pods:
            ids = {"namespace": p.namespace, "pod": p.name, "uid": f"uid-{p.name}"}
            lines.append(f"kube_pod_info{_labels(**ids, node=p.node, priority_class=p.priority_class, created_by_kind='ReplicaSet')} 1")
            lines.append(f"kube_pod_labels{_labels(**ids, label_app=p.app, label_version=p.version)} 1")
            for phase in ("Pending", "Running", "Succeeded", "Failed", "Unknown"):
                lines.append(f"kube_pod_status_phase{_labels(**ids, phase=phase)} {int(phase == p.phase)}")
            container = "triton" if p.app else "pause"
            lines.append(
                f"kube_pod_container_resource_requests{_labels(**ids, container=container, node=p.node, resource=p.gpu_resource, unit='integer')} 1"
            )
        # Every Ray pod of a graph carries `app: <graph>` (components/serving/graphs.py _pod_template).
        for g in self.topology.ray_graphs:
            for p in ray_pods(g):
                lines.append(f"kube_pod_labels{_labels(namespace=p.namespace, pod=p.name, uid=f'uid-{p.name}', label_app=g.name)} 1")
        return lines + self.hpas() + ksm_series()

    def hpas(self) -> list[str]:
        """kube-state-metrics' series of one HPA per Triton version, as the platform declares them
        (auto-named, scaling the Deployment `<service>-<version>` on the queue-time metric)."""
        lines = []
        versions = sorted({(p.namespace, p.app, p.version) for p in self.topology.triton_pods})
        for namespace, app, version in versions:
            ids = {"namespace": namespace, "horizontalpodautoscaler": f"{app}-{version}-hpa-0a1b2c3"}
            target = {"scaletargetref_api_version": "apps/v1", "scaletargetref_kind": "Deployment",
                      "scaletargetref_name": f"{app}-{version}"}
            metric = {"metric_name": QUEUE_TIME_METRIC, "metric_target_type": "average"}
            replicas = sum(1 for p in self.topology.triton_pods if (p.namespace, p.app, p.version) == (namespace, app, version))
            lines += [
                f"kube_horizontalpodautoscaler_info{_labels(**ids, **target)} 1",
                f"kube_horizontalpodautoscaler_spec_min_replicas{_labels(**ids)} 1",
                f"kube_horizontalpodautoscaler_spec_max_replicas{_labels(**ids)} 3",
                f"kube_horizontalpodautoscaler_spec_target_metric{_labels(**ids, **metric)} 50000",
                f"kube_horizontalpodautoscaler_status_target_metric{_labels(**ids, **metric)} {self._value('kube_horizontalpodautoscaler_status_target_metric', str(ids), 40000)}",
                f"kube_horizontalpodautoscaler_status_current_replicas{_labels(**ids)} {replicas}",
                f"kube_horizontalpodautoscaler_status_desired_replicas{_labels(**ids)} {replicas + 1}",
            ]
            for condition, status in (("AbleToScale", "true"), ("ScalingActive", "true"), ("ScalingLimited", "false")):
                for value in ("true", "false", "unknown"):
                    lines.append(f"kube_horizontalpodautoscaler_status_condition{_labels(**ids, condition=condition, status=value)} {int(value == status)}")
        return lines

    def render(self, path: str) -> str | None:
        parts = path.strip("/").split("/")
        with self.lock:
            if parts[0] == "triton" and len(parts) == 3:
                lines = self.triton(parts[1], parts[2])
            elif parts[0] == "dcgm" and len(parts) == 2:
                lines = self.dcgm(parts[1])
            elif parts[0] == "envoy" and len(parts) == 3:
                lines = self.envoy(parts[1], parts[2])
            elif parts[0] == "gateway":
                lines = self.gateway()
            elif parts[0] == "ksm":
                lines = self.ksm()
            elif parts[0] in ("kueue", "jobset", "llm-d-router-epp"):
                lines = controller_series(self, f"{parts[0]}.txt")
            elif parts[0] == "dcgm-training":
                lines = dcgm_series(self)
            elif parts[0] == "ray" and len(parts) == 3:
                graph = next(g for g in self.topology.ray_graphs if g.name == parts[1])
                lines = ray_series(self, graph, parts[2])
            elif parts[0] == "ray-triton" and len(parts) == 3:
                lines = self.step_triton(parts[1], parts[2])
            else:
                return None
        return "\n".join(lines) + "\n"

    def serve(self) -> tuple[ThreadingHTTPServer, int]:
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's API)
                body = exporter.render(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                self.wfile.write((body or "").encode())

            def log_message(self, *args):
                pass

        port = free_port()
        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, port


def scrape_config(topology: Topology, exporter_port: int) -> list[dict[str, Any]]:
    """Jobs labelled as the platform's monitors label them (PodMonitor / ServiceMonitor target labels)."""
    target = [f"127.0.0.1:{exporter_port}"]

    def static(path: str, **labels: str) -> dict[str, Any]:
        return {"targets": target, "labels": {"__metrics_path__": path, **labels}}

    pods = topology.triton_pods
    return [
        {
            "job_name": "triton",
            "static_configs": [
                static(f"/triton/{p.namespace}/{p.name}", namespace=p.namespace, pod=p.name, container="triton", endpoint="http-metrics")
                for p in pods
            ],
        },
        {
            "job_name": "envoy-stats",
            "static_configs": [
                static(f"/envoy/{p.namespace}/{p.name}", namespace=p.namespace, pod=p.name, container="istio-proxy")
                for p in pods
            ],
        },
        {
            # The ingress gateway's pod, selected by the same envoy-stats PodMonitor as the sidecars.
            "job_name": "envoy-stats-gateway",
            "static_configs": [static("/gateway", namespace="istio-system", pod="istio-ingressgateway-0", container="istio-proxy")],
        },
        {
            # The GPU operator's ServiceMonitor does not honour labels: the GPU's pod becomes exported_pod.
            "job_name": "nvidia-dcgm-exporter",
            "static_configs": [
                static(f"/dcgm/{node}", namespace=DCGM_NAMESPACE, pod=f"nvidia-dcgm-exporter-{node}", container="nvidia-dcgm-exporter")
                for node in sorted({g[0] for g in topology.gpus})
            ],
        },
        {"job_name": "kube-state-metrics", "honor_labels": True, "static_configs": [static("/ksm")]},
        # The controllers' metrics Services; their own namespace labels become exported_namespace.
        {"job_name": "kueue", "static_configs": [static("/kueue", namespace=KUEUE_NAMESPACE, pod="kueue-controller-manager-0")]},
        {"job_name": "jobset", "static_configs": [static("/jobset", namespace=JOBSET_NAMESPACE, pod="jobset-controller-manager-0")]},
        # An LLM version's endpoint picker (its chart's ServiceMonitor).
        {"job_name": "endpoint-picker", "static_configs": [static("/llm-d-router-epp", namespace="chat", pod="chat-v1-epp-0")]},
        {"job_name": "nvidia-dcgm-exporter-training", "static_configs": [
            static("/dcgm-training", namespace=DCGM_NAMESPACE, pod="nvidia-dcgm-exporter-train", container="nvidia-dcgm-exporter")]},
        {
            # The graph's PodMonitor: every Ray pod on its `metrics` port (Ray's series name no namespace or pod).
            "job_name": "ray",
            "static_configs": [
                static(f"/ray/{g.name}/{p.name}", namespace=p.namespace, pod=p.name, container=p.container, endpoint="metrics")
                for g in topology.ray_graphs for p in ray_pods(g)
            ],
        },
        {
            # The same PodMonitor on each worker's `triton-metrics` port: the step's in-process Triton.
            "job_name": "ray-triton",
            "static_configs": [
                static(f"/ray-triton/{g.name}/{p.name}", namespace=p.namespace, pod=p.name, container=p.container,
                       endpoint="triton-metrics")
                for g in topology.ray_graphs for p in ray_pods(g) if p.step
            ],
        },
    ]


class PrometheusServer:
    """`prometheus` from Debian on a free loopback port with a temporary data directory."""

    def __init__(self, settings: Settings, workdir: Path):
        if shutil.which("prometheus") is None:
            raise RuntimeError("prometheus is not installed (apt-get install prometheus)")
        self.topology = Topology(settings)
        self.exporter = Exporter(self.topology)
        self.server, exporter_port = self.exporter.serve()
        self.port = free_port()
        rules = workdir / "rules.yml"
        rules.write_text(yaml.safe_dump({"groups": alerts.rule_groups(observability_inputs(settings))}, sort_keys=False))
        config = {
            "global": {"scrape_interval": f"{SCRAPE_SECONDS}s", "evaluation_interval": f"{SCRAPE_SECONDS}s"},
            "rule_files": [str(rules)],
            "scrape_configs": scrape_config(self.topology, exporter_port),
        }
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
        self.log = (workdir / "prometheus.log").open("w")
        self.process = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={workdir / 'prometheus.yml'}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.targets = sum(len(job["static_configs"]) for job in config["scrape_configs"])

    def api(self, endpoint: str, **params: str) -> dict[str, Any]:
        data = urllib.parse.urlencode(params).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/api/v1/{endpoint}", data=data)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as err:  # 400/422 carry the error as JSON
            return json.loads(err.read())

    def query(self, expr: str) -> dict[str, Any]:
        return self.api("query", query=expr)

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until every target is up and has been scraped often enough for rate() over 1m."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.process.returncode}")
            try:
                result = self.query("count(count_over_time(up[1m]) >= 5 and up == 1)")
                series = result.get("data", {}).get("result", [])
                if series and int(float(series[0]["value"][1])) == self.targets:
                    time.sleep(3 * SCRAPE_SECONDS)  # one more rule evaluation after the last scrape
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise TimeoutError("prometheus did not scrape every target in time")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.server.shutdown()
        self.log.close()

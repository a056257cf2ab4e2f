"""Alerts about the inference graphs that run on Ray (`placement: ray`), over Ray Serve's own
metrics: one rule per graph and per step, each labelled with its graph (GRAPH_LABEL) and
namespace, so a critical about a graph silences the warnings about the same graph.

Names, tags and status codes as Ray 2.60.0 exports them (tests/catalogues/ray-serve.txt names
the source files). Every Ray pod of a graph is scraped on its `metrics` port (KubeRay adds it to
the head and every worker; serving/graphs.py declares the PodMonitor): a step's request, error
and latency series come from its replicas on the step's workers, the replica counts and
statuses from Serve's controller on the head. Both carry `application` (the graph's name: its
Serve application) and `deployment` (the step's Serve deployment), and the pod's namespace.
"""

from __future__ import annotations

from typing import Any

from inference_platform.observability.alert_rule import alert
from inference_platform.settings.graphs import Graph, GraphStep

# The label that names the graph an alert is about (Ray's own series call it `application`).
GRAPH_LABEL = "graph"
STEP_LABEL = "step"
# ray/serve/_private/application_state.py serve_application_status: 1=DEPLOY_FAILED, 2=UNHEALTHY
# (0=UNKNOWN, 3=NOT_STARTED, 4=DELETING, 5=DEPLOYING, 6=RUNNING).
APPLICATION_FAILED_STATUSES = (1, 2)
# A step is slow when its 95th percentile takes this share of the graph's route timeout: the
# whole chain must finish within timeoutSeconds or the gateway answers 504.
STEP_LATENCY_SHARE_OF_TIMEOUT = 0.5


def serve_deployment(step: GraphStep) -> str:
    """A step's Serve deployment, as graph_app names it (graph_app/spec.py; serving/graphs.py step_resource)."""
    return f"step-{step.name}"


def _selector(graph: Graph, step: GraphStep | None = None) -> str:
    selector = f'namespace="{graph.k8s_namespace}",application="{graph.name}"'
    return selector + (f',deployment="{serve_deployment(step)}"' if step else "")


def application_failed_expr(graph: Graph) -> str:
    """The graph's Serve application failed to deploy or is unhealthy, as the controller of a Ray
    cluster reports it (per head pod: during an upgrade the old and the new cluster report apart)."""
    low, high = APPLICATION_FAILED_STATUSES
    return f"(max by (namespace, pod) (ray_serve_application_status{{{_selector(graph)}}}) >= {low}) <= {high}"


def step_error_ratio_expr(graph: Graph, step: GraphStep, ratio: float) -> str:
    """Share of a step's requests that raise. Serve counts successes and errors apart
    (replica.py record_request_metrics); a step that never succeeded has no success series."""
    sel = _selector(graph, step)
    errors = f"sum by (namespace) (rate(ray_serve_deployment_error_counter_total{{{sel}}}[5m]))"
    successes = f"sum by (namespace) (rate(ray_serve_deployment_request_counter_total{{{sel}}}[5m]))"
    return f"{errors} / (({successes} or 0 * {errors}) + {errors}) > {ratio:g}"


def step_latency_threshold_seconds(graph: Graph) -> float:
    return graph.timeout_seconds * STEP_LATENCY_SHARE_OF_TIMEOUT


def step_latency_expr(graph: Graph, step: GraphStep) -> str:
    """95th percentile of the time a step's replicas take per request, in seconds (Serve's
    histogram counts milliseconds)."""
    buckets = f"sum by (namespace, le) (rate(ray_serve_deployment_processing_latency_ms_bucket{{{_selector(graph, step)}}}[5m]))"
    return f"histogram_quantile(0.95, {buckets}) / 1000 > {step_latency_threshold_seconds(graph):g}"


def step_replicas_missing_expr(graph: Graph, step: GraphStep) -> str:
    """Replicas Serve wants for a step but does not run healthy: they wait for a worker the
    worker group cannot add (its maxReplicas, no GPU node) or fail to start. Both series come
    from the controller on the head pod; with no healthy replica at all, healthy counts 0."""
    sel = _selector(graph, step)
    target = f"ray_serve_autoscaling_target_replicas{{{sel}}}"
    healthy = f"sum by (namespace, pod) (ray_serve_deployment_replica_healthy{{{sel}}} or 0 * {target})"
    return f"max by (namespace, pod) ({target}) - {healthy} > 0"


def step_at_max_expr(graph: Graph, step: GraphStep) -> str:
    """Serve's autoscaler asks for the step's most replicas."""
    return f"max by (namespace, pod) (ray_serve_autoscaling_target_replicas{{{_selector(graph, step)}}}) >= {step.replicas.max}"


def _step_rules(graph: Graph, step: GraphStep, failure_ratio: float) -> list[dict[str, Any]]:
    labels = {"namespace": graph.k8s_namespace, GRAPH_LABEL: graph.name, STEP_LABEL: step.name}
    rules = [
        alert("GraphStepErrorRatioHigh", step_error_ratio_expr(graph, step, failure_ratio), "5m", "critical",
              f"Graph {graph.name} step {step.name} fails {{{{ $value | humanizePercentage }}}} of its requests "
              f"(see ray_serve_deployment_error_counter_total's exception_type)", **labels),
        alert("GraphStepLatencyHigh", step_latency_expr(graph, step), "10m", "warning",
              f"Graph {graph.name} step {step.name} takes {{{{ $value | humanizeDuration }}}} per request (p95), more than "
              f"{STEP_LATENCY_SHARE_OF_TIMEOUT:.0%} of the graph's {graph.timeout_seconds:g} s route timeout", **labels),
        alert("GraphStepReplicasMissing", step_replicas_missing_expr(graph, step), "15m", "warning",
              f"Graph {graph.name} step {step.name}: {{{{ $value }}}} of the replicas Serve wants have not run for "
              f"15 minutes (no worker: its group's maxReplicas or no free GPU node; or the replica fails to start)",
              **labels),
    ]
    if step.replicas.max > step.replicas.min:  # a fixed size is no saturation, and would fire for ever
        rules.append(alert(
            "GraphStepAtMaxReplicas", step_at_max_expr(graph, step), "15m", "warning",
            f"Graph {graph.name} step {step.name} has wanted its maxReplicas ({step.replicas.max}) for 15 minutes; "
            f"requests may queue", **labels))
    return rules


def graph_rules(graphs: list[Graph], failure_ratio: float) -> list[dict[str, Any]]:
    """The rules about the Ray graphs: each graph's application, then each of its steps."""
    rules: list[dict[str, Any]] = []
    for graph in graphs:
        rules.append(alert(
            "GraphApplicationFailed", application_failed_expr(graph), "5m", "critical",
            f"Graph {graph.name}: its Serve application on {{{{ $labels.pod }}}} is DEPLOY_FAILED (1) or UNHEALTHY (2): "
            f"{{{{ $value }}}} (see `serve status` on the head, or the RayService's status)",
            namespace=graph.k8s_namespace, **{GRAPH_LABEL: graph.name}))
        for step in graph.steps:
            rules += _step_rules(graph, step, failure_ratio)
    return rules

"""Prometheus alerting and recording rules, built by plain functions.

`rule_groups(settings)` returns the groups of the platform's PrometheusRule; the
tests write them to a file for `promtool check rules` / `promtool test rules` and
load them into a real Prometheus. Thresholds come from
`observability.alerts`; what depends on the stack (canary versions, node-group
sizes, service endpoints) comes from the settings.
"""

from __future__ import annotations

from typing import Any

from .config import Service, Settings
from .node_contract import GROUP_LABEL

# kube-state-metrics turns the allow-listed label into label_<name with _>.
NODE_GROUP_LABEL = "label_" + GROUP_LABEL.replace("/", "_").replace("-", "_").replace(".", "_")
# Spare-capacity placeholder pods run at this PriorityClass (components/coldstart.py).
PLACEHOLDER_PRIORITY_CLASS = "gpu-placeholder"
# Extended GPU resources as kube-state-metrics names them (nvidia.com/gpu -> nvidia_com_gpu).
GPU_RESOURCE_REGEX = "nvidia_com_.*"

ERROR_RATIO_RECORD = "inference_platform:istio_request_error_ratio:rate5m"
ENDPOINT_INFO_RECORD = "inference_platform:endpoint:info"
# A canary must be this much (absolute ratio) worse than stable before it alerts,
# so a single failed request on a quiet canary does not page anyone.
CANARY_ERROR_MARGIN = 0.01


# --------------------------------------------------------------------------- expressions


def triton_queue_time_expr(threshold_ms: float) -> str:
    """Average time a request waits in Triton's queue, per pod and model, above a threshold."""
    by = "namespace, pod, model"
    return (
        f"(sum by ({by}) (rate(nv_inference_queue_duration_us[5m]))"
        f" / clamp_min(sum by ({by}) (rate(nv_inference_request_success[5m])), 0.001))"
        f" / 1000 > {threshold_ms:g}"
    )


def triton_failure_ratio_expr(ratio: float) -> str:
    by = "namespace, model"
    failed = f"sum by ({by}) (rate(nv_inference_request_failure[5m]))"
    ok = f"sum by ({by}) (rate(nv_inference_request_success[5m]))"
    return f"{failed} / ({ok} + {failed}) > {ratio:g}"


def error_ratio_record_expr() -> str:
    """5xx share of the requests each service version receives, from the server-side proxy."""
    by = "destination_workload_namespace, destination_service_name, destination_version"
    sel = 'reporter="destination"'
    return (
        f'sum by ({by}) (rate(istio_requests_total{{{sel},response_code=~"5.."}}[5m]))'
        f" / sum by ({by}) (rate(istio_requests_total{{{sel}}}[5m]))"
    )


def _version_selector(service: Service, version: str) -> str:
    return (
        f'destination_workload_namespace="{service.k8s_namespace}",'
        f'destination_service_name="{service.name}",destination_version="{version}"'
    )


def canary_error_expr(service: Service, canary: str, stable: str) -> str:
    return (
        f"{ERROR_RATIO_RECORD}{{{_version_selector(service, canary)}}}"
        f" > ignoring(destination_version)"
        f" ({ERROR_RATIO_RECORD}{{{_version_selector(service, stable)}}} + {CANARY_ERROR_MARGIN:g})"
    )


def gpu_memory_expr(ratio: float) -> str:
    return f"DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) > {ratio:g}"


def xid_errors_expr() -> str:
    # The gauge holds the code of the last XID error; non-zero means the GPU reported one.
    return "DCGM_FI_DEV_XID_ERRORS > 0"


def pending_gpu_pods_expr() -> str:
    """Pods waiting for a GPU (placeholders excluded: they are meant to be preempted)."""
    pending = 'sum by (namespace, pod) (kube_pod_status_phase{phase="Pending"}) > 0'
    wants_gpu = (
        f'sum by (namespace, pod) (kube_pod_container_resource_requests{{resource=~"{GPU_RESOURCE_REGEX}"}}) > 0'
    )
    placeholder = f'kube_pod_info{{priority_class="{PLACEHOLDER_PRIORITY_CLASS}"}}'
    return f"{pending} and on (namespace, pod) {wants_gpu} unless on (namespace, pod) {placeholder}"


def node_group_nodes_expr(group: str) -> str:
    return f'count(kube_node_labels{{{NODE_GROUP_LABEL}="{group}"}})'


def node_group_at_max_expr(group: str, max_nodes: int) -> str:
    return f"{node_group_nodes_expr(group)} >= {max_nodes}"


# --------------------------------------------------------------------------- groups


def _alert(name: str, expr: str, duration: str, severity: str, summary: str, **labels: str) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": duration,
        "labels": {"severity": severity, **labels},
        "annotations": {"summary": summary},
    }


def stable_and_canaries(service: Service) -> tuple[str, list[str]]:
    """The version with the most traffic is stable; other versions with traffic are canaries."""
    stable = max(service.versions, key=lambda v: v.weight).name
    return stable, [v.name for v in service.versions if v.weight > 0 and v.name != stable]


def endpoint_records(settings: Settings) -> list[dict[str, Any]]:
    """One constant series per service URL, so dashboards list endpoints without hard-coding them."""
    scheme = "https" if settings.mesh.tls.enabled else "http"
    return [
        {
            "record": ENDPOINT_INFO_RECORD,
            "expr": "vector(1)",
            "labels": {"namespace": svc.k8s_namespace, "service": svc.name, "url": f"{scheme}://{host}"},
        }
        for svc in settings.services
        for host in svc.hosts
    ]


def rule_groups(settings: Settings) -> list[dict[str, Any]]:
    t = settings.observability.alerts
    triton = [
        _alert(
            "TritonQueueTimeHigh",
            triton_queue_time_expr(t.queue_time_ms),
            "5m",
            "warning",
            f"Triton {{{{ $labels.namespace }}}}/{{{{ $labels.pod }}}} model {{{{ $labels.model }}}}: "
            f"requests wait {{{{ $value | humanize }}}} ms in the queue (threshold {t.queue_time_ms:g} ms)",
        ),
        _alert(
            "TritonFailureRatioHigh",
            triton_failure_ratio_expr(t.failure_ratio),
            "5m",
            "critical",
            "Triton model {{ $labels.model }} in {{ $labels.namespace }} fails "
            "{{ $value | humanizePercentage }} of requests",
        ),
    ]
    canary: list[dict[str, Any]] = [{"record": ERROR_RATIO_RECORD, "expr": error_ratio_record_expr()}]
    for svc in settings.services:
        stable, canaries = stable_and_canaries(svc)
        for version in canaries:
            canary.append(
                _alert(
                    "CanaryErrorRatioAboveStable",
                    canary_error_expr(svc, version, stable),
                    "10m",
                    "warning",
                    f"{svc.name} {version} returns 5xx more often than {stable}: {{{{ $value | humanizePercentage }}}}",
                    # ignoring(destination_version) drops the version from the result; name both.
                    service=svc.name,
                    canary_version=version,
                    stable_version=stable,
                )
            )
    gpu = [
        _alert(
            "GpuMemoryNearlyFull",
            gpu_memory_expr(t.gpu_memory_ratio),
            "10m",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} uses {{ $value | humanizePercentage }} of its memory",
        ),
        _alert(
            "GpuXidError",
            xid_errors_expr(),
            "0m",
            "critical",
            "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} reported XID error {{ $value }}",
        ),
        _alert(
            "GpuPodsPending",
            pending_gpu_pods_expr(),
            "10m",
            "warning",
            "Pod {{ $labels.namespace }}/{{ $labels.pod }} has waited 10 minutes for a GPU",
        ),
    ]
    for group in settings.gpu_groups:
        gpu.append(
            _alert(
                "GpuNodeGroupAtMax",
                node_group_at_max_expr(group.name, group.max_nodes),
                "15m",
                "warning",
                f"GPU node group {group.name} has reached maxNodes ({group.max_nodes}); it cannot grow further",
                node_group=group.name,
            )
        )
    groups = [
        {"name": "inference-platform.triton", "rules": triton},
        {"name": "inference-platform.canary", "rules": canary},
        {"name": "inference-platform.gpu", "rules": gpu},
    ]
    endpoints = endpoint_records(settings)
    if endpoints:
        groups.append({"name": "inference-platform.endpoints", "rules": endpoints})
    return groups


def alert_names(groups: list[dict[str, Any]]) -> set[str]:
    return {r["alert"] for g in groups for r in g["rules"] if "alert" in r}


def recorded_names(groups: list[dict[str, Any]]) -> set[str]:
    return {r["record"] for g in groups for r in g["rules"] if "record" in r}

"""Prometheus alerting and recording rules, built by plain functions.

`rule_groups(a)` returns the groups of the platform's PrometheusRule from the
Observability component's inputs; the tests write them to a file for `promtool check
rules` / `promtool test rules` and load them into a real Prometheus. Thresholds come from
`observability.alerts`; what depends on the stack (canary versions, node-group
sizes, service endpoints) comes from the services and GPU groups it watches.
"""

from __future__ import annotations

from typing import Any

from inference_platform.core.endpoints import in_cluster_host
from inference_platform.core.node_contract import GROUP_LABEL
from inference_platform.observability.alert_rule import alert as _alert
from inference_platform.observability.graph_alerts import GRAPH_LABEL, graph_rules
from inference_platform.observability.inputs import ObservabilityInputs
from inference_platform.observability.llm_alerts import llm_routing_rules
from inference_platform.observability.llm_slo import objective_rules
from inference_platform.observability.training_alerts import training_rules
from inference_platform.serving.llm_routing import inference_pool_service_name
from inference_platform.settings.observability import AlertingSettings, AlertReceiver
from inference_platform.settings.serving import Service

# kube-state-metrics turns the allow-listed label into label_<name with _>.
NODE_GROUP_LABEL = "label_" + GROUP_LABEL.replace("/", "_").replace("-", "_").replace(".", "_")
# Spare-capacity placeholder pods run at this PriorityClass (components/gpu/coldstart.py).
PLACEHOLDER_PRIORITY_CLASS = "gpu-placeholder"
# Extended GPU resources as kube-state-metrics names them (nvidia.com/gpu -> nvidia_com_gpu).
GPU_RESOURCE_REGEX = "nvidia_com_.*"

ERROR_RATIO_RECORD = "inference_platform:istio_request_error_ratio:rate5m"
# Triton's own failure ratio per service version, under the proxy record's label names: a gRPC
# stream that fails mid-way ends with status OK (server stream_infer_handler.cc sends the error
# inside the stream), so only Triton's counter sees it.
TRITON_FAILURE_RATIO_RECORD = "inference_platform:triton_request_failure_ratio:rate5m"
VERSION_LABELS = "destination_workload_namespace, destination_service_name, destination_version"
ENDPOINT_INFO_RECORD = "inference_platform:endpoint:info"
# The label that names the Triton service an alert is about (never `service`: scrape targets set that).
SERVICE_LABEL = "triton_service"
# A canary must be this much (absolute ratio) worse than stable before it alerts,
# so a single failed request on a quiet canary does not page anyone.
CANARY_ERROR_MARGIN = 0.01
# gRPC answers failures with HTTP 200 and a grpc-status; these codes are the server's fault
# (the ones gRPC-to-HTTP mappings send as 5xx): UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED,
# INTERNAL, UNAVAILABLE, DATA_LOSS. Client mistakes (INVALID_ARGUMENT, NOT_FOUND,
# UNAUTHENTICATED, ...), CANCELLED and RESOURCE_EXHAUSTED (throttling) do not count.
GRPC_SERVER_ERROR_CODES = (2, 4, 12, 13, 14, 15)
# The ingress gateway proxies report the requests they send as reporter="source".
GATEWAY_WORKLOAD = "istio-ingressgateway"
# XIDs that mean the GPU itself is broken and needs a reset, a drain or a replacement (NVIDIA's
# XID catalogue): 48 double-bit ECC, 63/64 row remapping, 74 NVLink, 79 fallen off the bus,
# 92 high single-bit ECC rate, 94/95 contained/uncontained ECC, 119/120 GSP, 140 unrecovered ECC.
# Others (13 graphics exception, 31 memory page fault, 43 stopped processing, 45 preemptive
# cleanup, ...) are usually caused by the application and clear with its restart.
GPU_FAULT_XIDS = (48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140)
# A new XID stays visible this long (DCGM_FI_DEV_XID_ERRORS holds the last code seen).
XID_WINDOW = "15m"


# --------------------------------------------------------------------------- expressions


def triton_queue_time_expr(threshold_ms: float) -> str:
    """Average time a request waits in Triton's queue, per pod and model, above a threshold."""
    by = "namespace, pod, model"
    return (
        f"(sum by ({by}) (rate(nv_inference_queue_duration_us[5m]))"
        f" / clamp_min(sum by ({by}) (rate(nv_inference_request_success[5m])), 0.001))"
        f" / 1000 > {threshold_ms:g}"
    )


def named_by_service(expr: str) -> str:
    """`expr`'s series with the Triton service they are about (the pods' app label) in
    SERVICE_LABEL, as every alert about a service carries it, so a critical about the service
    inhibits its warnings."""
    return f'label_replace({expr}, "{SERVICE_LABEL}", "$1", "label_app", "(.+)")'


def _triton_failure_ratio(by: str) -> str:
    """Share of Triton's requests that fail, summed by `by` (which may name the pods' app and
    version labels). Cancellations are the client's (Triton core infer_stats.cc reasons REJECTED,
    CANCELED, BACKEND, OTHER): a client that hangs up mid-stream is no failure of the server. Core
    counts a failure whichever frontend took the request (infer_request.cc ReportStatistics), so
    errors sent inside a gRPC stream count too."""
    pods = "on (namespace, pod) group_left (label_app, label_version) kube_pod_labels"
    failed = f'sum by ({by}) (rate(nv_inference_request_failure{{reason!="CANCELED"}}[5m]) * {pods})'
    ok = f"sum by ({by}) (rate(nv_inference_request_success[5m]) * {pods})"
    return f"{failed} / ({ok} + {failed})"


def triton_failure_ratio_expr(ratio: float) -> str:
    """Share of a model's requests that fail, per service version (the pods' app and version
    labels), so a failing canary is not averaged away by its stable version."""
    return named_by_service(f"{_triton_failure_ratio('namespace, model, label_app, label_version')} > {ratio:g}")


def triton_failure_ratio_record_expr() -> str:
    """Triton's failure ratio per service version, labelled as the proxy's error ratio is."""
    expr = _triton_failure_ratio("namespace, label_app, label_version")
    for target, source in (("destination_workload_namespace", "namespace"), ("destination_service_name", "label_app"),
                           ("destination_version", "label_version")):
        expr = f'label_replace({expr}, "{target}", "$1", "{source}", "(.+)")'
    return expr


def grpc_server_error_regex() -> str:
    return "|".join(str(code) for code in GRPC_SERVER_ERROR_CODES)


def error_ratio_record_expr() -> str:
    """Share of the requests each service version receives that fail on the server side: HTTP 5xx,
    or a gRPC status that is the server's fault (sent with HTTP 200), from the server-side proxy."""
    by = VERSION_LABELS
    sel = 'reporter="destination"'
    # A gRPC call that fails with both (a 503 with UNAVAILABLE) is one series, counted once by `or`.
    failed = (
        f'rate(istio_requests_total{{{sel},response_code=~"5.."}}[5m])'
        f' or rate(istio_requests_total{{{sel},grpc_response_status=~"{grpc_server_error_regex()}"}}[5m])'
    )
    total = f"sum by ({by}) (rate(istio_requests_total{{{sel}}}[5m]))"
    # A version with no failure has no failing series: `or 0 * total` records its ratio as 0,
    # so a canary can still be compared with a flawless stable.
    return f"(sum by ({by}) ({failed}) or 0 * {total}) / {total}"


def _version_selector(service: Service, version: str) -> str:
    return (
        f'destination_workload_namespace="{service.k8s_namespace}",'
        f'destination_service_name="{service.name}",destination_version="{version}"'
    )


def _proxy_failure_ratio(service: Service, version: str) -> str:
    """The version's ratio in ERROR_RATIO_RECORD. Its `destination_service_name` is what the pods'
    sidecars record: the first Service of the inbound cluster of the port the request arrived on
    (istio/proxy 1.30.3 source/extensions/filters/http/istio_stats/istio_stats.cc:1011-1029 and
    :1190, the cluster's istio.services[0].name over the Host header; istio 1.30.3
    pilot/pkg/networking/core/cluster_builder.go:1050-1064 lists the Services with a port on that
    target port, oldest first, model/context.go:599-609). An LLM version's requests arrive
    on the OpenAI frontend's port, which only its InferencePool's shadow Service targets, so there
    the name is `<pool>-ip-<hash>`, one per version: it is selected per version and named as the
    service, so the canary and the stable version compare, and both sit with Triton's half."""
    if not service.llm_routed:
        return f"{ERROR_RATIO_RECORD}{{{_version_selector(service, version)}}}"
    pool = inference_pool_service_name(service, next(v for v in service.versions if v.name == version))
    sel = (f'destination_workload_namespace="{service.k8s_namespace}",destination_service_name="{pool}",'
           f'destination_version="{version}"')
    return (f'label_replace({ERROR_RATIO_RECORD}{{{sel}}}, "destination_service_name", "{service.name}", '
            f'"destination_service_name", ".*")')


def version_failure_ratio_expr(service: Service, version: str) -> str:
    """The worse of the two failure ratios of a service version: what its proxy saw (5xx, gRPC
    server errors) and what Triton counted (which includes errors inside gRPC streams)."""
    triton = f"{TRITON_FAILURE_RATIO_RECORD}{{{_version_selector(service, version)}}}"
    return f"max by ({VERSION_LABELS}) ({_proxy_failure_ratio(service, version)} or {triton})"


def canary_error_expr(service: Service, canary: str, stable: str) -> str:
    return (
        f"{version_failure_ratio_expr(service, canary)}"
        f" > ignoring(destination_version)"
        f" ({version_failure_ratio_expr(service, stable)} + {CANARY_ERROR_MARGIN:g})"
    )


def _requests_rate(selector: str) -> str:
    return f"sum(rate(istio_requests_total{{{selector}}}[5m]))"


def canary_not_serving_expr(service: Service, canary: str, stable: str) -> str:
    """Clients of the service get 503s for want of a ready pod while the canary's own proxy
    reports no request at all. A canary with no ready pod never reaches its proxy: the gateway
    answers 503 with response_flags="UH" and, no host having been picked,
    destination_version="unknown", so only the absence on the destination side names the
    version. A healthy canary that simply got no request (a 10% weight on a quiet service)
    leaves no UH answer behind, so it never pages."""
    fqdn = in_cluster_host(service.name, service.k8s_namespace)
    no_ready_pod = _requests_rate(f'reporter="source",source_workload="{GATEWAY_WORKLOAD}",destination_service="{fqdn}",'
                                  'response_code="503",response_flags="UH"')
    canary_answers = _requests_rate(f'reporter="destination",{_version_selector(service, canary)}')
    return f"({no_ready_pod} > 0) unless on () ({canary_answers} > 0)"


def route_timeout_expr(service: Service, ratio: float) -> str:
    """Share of the gateway's requests to the service that end 504: the route timeout cut them
    (Envoy answers 504 itself when timeoutSeconds passes, so only the gateway's own series, the
    source side, show it; Triton never reports a request it was still running)."""
    fqdn = in_cluster_host(service.name, service.k8s_namespace)
    to_service = f'reporter="source",source_workload="{GATEWAY_WORKLOAD}",destination_service="{fqdn}"'
    timed_out = _requests_rate(to_service + ',response_code="504"')
    return f"{timed_out} / {_requests_rate(to_service)} > {ratio:g}"


def _route_timeout_rules(services: list[Service], ratio: float) -> list[dict[str, Any]]:
    return [
        _alert(
            "ServiceRouteTimeouts",
            route_timeout_expr(svc, ratio),
            "5m",
            "warning",
            f"{svc.name}: {{{{ $value | humanizePercentage }}}} of its requests end 504 at the gateway, cut by "
            f"the route timeout ({svc.timeout_seconds:g} s)",
            namespace=svc.k8s_namespace,
            **{SERVICE_LABEL: svc.name},
        )
        for svc in services
        if not svc.llm_routed  # llm_alerts.py: its requests leave its own Gateway for its pools
    ]


def _pods_of_versions(namespace: str, app: str, versions: list[str]) -> str:
    """kube_pod_labels of the versions' pods, with namespace/pod renamed to the exported_* labels
    that DCGM series carry (the GPU operator's ServiceMonitor does not honour the exporter's labels)."""
    pods = f'kube_pod_labels{{namespace="{namespace}",label_app="{app}",label_version=~"{"|".join(versions)}"}}'
    renamed = f'label_replace({pods}, "exported_namespace", "$1", "namespace", "(.*)")'
    return f'label_replace({renamed}, "exported_pod", "$1", "pod", "(.*)")'


def preallocating_pods(services: list[Service]) -> list[str]:
    """Selectors of the pods whose engine reserves most GPU memory by design (TensorRT-LLM's KV
    cache, vLLM's gpu_memory_utilization)."""
    out = []
    for svc in services:
        versions = [v.name for v in svc.versions if v.llm_backend is not None]
        if versions:
            out.append(_pods_of_versions(svc.k8s_namespace, svc.name, versions))
    return out


def gpu_memory_expr(ratio: float, skip_pods: list[str] = ()) -> str:
    expr = f"DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) > {ratio:g}"
    for pods in skip_pods:
        expr = f"({expr}) unless on (exported_namespace, exported_pod) {pods}"
    return expr


def _xid_is(codes: tuple[int, ...]) -> str:
    return " or ".join(f"DCGM_FI_DEV_XID_ERRORS == {code}" for code in codes)


def new_xid_expr(fault: bool) -> str:
    """A GPU's XID. DCGM_FI_DEV_XID_ERRORS is a gauge with the code of the last XID until the
    next one (or until the exporter restarts, as after the reset or reboot a fault needs).
    fault: the XIDs of a broken GPU, firing for as long as the GPU reports one (a broken GPU
    stays broken); else every other non-zero code, for XID_WINDOW after it changed (those
    clear with the application's restart). The gauge cannot show the same code twice in a
    row: a repeat needs the exporter's DCGM_EXP_XID_ERRORS_COUNT counter."""
    faults = _xid_is(GPU_FAULT_XIDS)
    if fault:
        return faults
    changed = f"changes(DCGM_FI_DEV_XID_ERRORS[{XID_WINDOW}]) > 0"
    return f"(DCGM_FI_DEV_XID_ERRORS > 0 unless ({faults})) and ({changed})"


def triton_pod_not_ready_expr(services: list[Service]) -> str:
    """A running Triton pod of the services that is not ready: its models did not load (the
    readiness probe asks Triton's /v2/health/ready, which fails until every model is ready)."""
    not_ready = 'kube_pod_status_ready{condition="true"} == 0'
    running = 'kube_pod_status_phase{phase="Running"} == 1'
    namespaces = "|".join(sorted({svc.k8s_namespace for svc in services}))
    apps = "|".join(sorted({svc.name for svc in services}))
    ours = f'kube_pod_labels{{namespace=~"{namespaces}",label_app=~"{apps}",label_version!=""}}'
    pods = (f"(({not_ready}) and on (namespace, pod) ({running}))"
            f" * on (namespace, pod) group_left (label_app, label_version) {ours}")
    return named_by_service(pods)


def hpa_at_max_expr(namespaces: list[str]) -> str:
    """An HPA of the services' namespaces that runs as many replicas as it may, unless it may
    run no other number (min = max: a fixed size is no saturation, and would fire for ever)."""
    ns = f'namespace=~"{"|".join(sorted(set(namespaces)))}"'
    on = "on (namespace, horizontalpodautoscaler)"
    return (
        f"kube_horizontalpodautoscaler_status_current_replicas{{{ns}}}"
        f" >= {on} kube_horizontalpodautoscaler_spec_max_replicas{{{ns}}}"
        f" unless {on} (kube_horizontalpodautoscaler_spec_max_replicas{{{ns}}}"
        f" == {on} kube_horizontalpodautoscaler_spec_min_replicas{{{ns}}})"
    )


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


def stable_and_canaries(service: Service) -> tuple[str, list[str]]:
    """The version with the most traffic is stable; other versions with traffic are canaries."""
    stable = max(service.versions, key=lambda v: v.weight).name
    return stable, [v.name for v in service.versions if v.weight > 0 and v.name != stable]


def endpoint_records(services: list[Service], tls: bool) -> list[dict[str, Any]]:
    """One constant series per service URL, so dashboards list endpoints without hard-coding them."""
    scheme = "https" if tls else "http"
    return [
        {
            "record": ENDPOINT_INFO_RECORD,
            "expr": "vector(1)",
            "labels": {"namespace": svc.k8s_namespace, "service": svc.name, "url": f"{scheme}://{host}"},
        }
        for svc in services
        for host in svc.hosts
    ]


def _canary_rules(services: list[Service]) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = [
        {"record": ERROR_RATIO_RECORD, "expr": error_ratio_record_expr()},
        {"record": TRITON_FAILURE_RATIO_RECORD, "expr": triton_failure_ratio_record_expr()},
    ]
    for svc in services:
        stable, canaries = stable_and_canaries(svc)
        # ignoring(destination_version) and `on ()` drop the version from the result; name both.
        labels = {"namespace": svc.k8s_namespace, SERVICE_LABEL: svc.name, "stable_version": stable}
        for version in canaries:
            rules.append(
                _alert(
                    "CanaryErrorRatioAboveStable",
                    canary_error_expr(svc, version, stable),
                    "10m",
                    "warning",
                    f"{svc.name} {version} fails (5xx, gRPC server error or Triton failure) more often than {stable}: "
                    f"{{{{ $value | humanizePercentage }}}}",
                    canary_version=version,
                    **labels,
                )
            )
            if svc.llm_routed:
                continue  # llm_alerts.py: the gateway's 503s for the canary's InferencePool
            rules.append(
                _alert(
                    "CanaryNotServing",
                    canary_not_serving_expr(svc, version, stable),
                    "5m",
                    "critical",
                    # No weight in the text: a weight shift must change only the VirtualService.
                    f"{svc.name} {version} gets traffic but answers none of it: no ready pod behind its subset "
                    f"(clients see 503)",
                    canary_version=version,
                    **labels,
                )
            )
    return rules


def _service_rules(services: list[Service]) -> list[dict[str, Any]]:
    if not services:
        return []
    # One rule for every version, so adding a version leaves the rules alone; it waits for the
    # longest startup budget, since loading models may take that long before it means a failure.
    budget = max(v.startup_budget_seconds for svc in services for v in svc.versions)
    namespaces = [svc.k8s_namespace for svc in services]
    return [
        _alert(
            "TritonPodNotReady",
            triton_pod_not_ready_expr(services),
            f"{budget}s",
            "warning",
            "Triton pod {{ $labels.namespace }}/{{ $labels.pod }} ({{ $labels.label_app }} {{ $labels.label_version }}) "
            f"has not been ready for {budget}s: a model failed to load (see its log)",
        ),
        _alert(
            "TritonHpaAtMax",
            hpa_at_max_expr(namespaces),
            "15m",
            "warning",
            "HPA {{ $labels.namespace }}/{{ $labels.horizontalpodautoscaler }} has run at maxReplicas "
            "({{ $value }}) for 15 minutes; queue time may grow",
        ),
    ]


def _gpu_rules(a: ObservabilityInputs) -> list[dict[str, Any]]:
    t = a.observability.alerts
    gpu = [
        _alert(
            "GpuMemoryNearlyFull",
            gpu_memory_expr(t.gpu_memory_ratio, preallocating_pods(a.services)),
            "10m",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} uses {{ $value | humanizePercentage }} of its memory",
        ),
        _alert(
            "GpuXidFault",
            new_xid_expr(fault=True),
            "0m",
            "critical",
            "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} reported XID {{ $value }}, a hardware fault: "
            "drain the node and reset or replace the GPU",
        ),
        _alert(
            "GpuXidError",
            new_xid_expr(fault=False),
            "0m",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} reported XID {{ $value }} (usually the application's; "
            "see the pod's log)",
        ),
        _alert(
            "GpuPodsPending",
            pending_gpu_pods_expr(),
            "10m",
            "warning",
            "Pod {{ $labels.namespace }}/{{ $labels.pod }} has waited 10 minutes for a GPU",
        ),
    ]
    for group in a.gpu_groups:
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
    return gpu


def rule_groups(a: ObservabilityInputs) -> list[dict[str, Any]]:
    t = a.observability.alerts
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
            "Triton model {{ $labels.model }} of {{ $labels.label_app }} {{ $labels.label_version }} in "
            "{{ $labels.namespace }} fails {{ $value | humanizePercentage }} of requests",
        ),
        *_service_rules(a.services),
        *_route_timeout_rules(a.services, t.failure_ratio),
    ]
    groups = [
        {"name": "inference-platform.triton", "rules": triton},
        {"name": "inference-platform.canary", "rules": _canary_rules(a.services)},
        {"name": "inference-platform.gpu", "rules": _gpu_rules(a)},
    ]
    llm_routing = llm_routing_rules(a.services, SERVICE_LABEL, t.failure_ratio, stable_and_canaries)
    if llm_routing:
        groups.append({"name": "inference-platform.llm-routing", "rules": llm_routing})
    objectives = objective_rules(a.services, SERVICE_LABEL)
    if objectives:
        groups.append({"name": "inference-platform.llm-objectives", "rules": objectives})
    ray_graphs = [g for g in a.graphs if g.placement == "ray"]
    if ray_graphs:
        groups.append({"name": "inference-platform.graphs", "rules": graph_rules(ray_graphs, t.failure_ratio)})
    training = training_rules(a.training_namespaces, a.training_cluster_queues)
    if training:
        groups.append({"name": "inference-platform.training", "rules": training})
    endpoints = endpoint_records(a.services, a.tls)
    if endpoints:
        groups.append({"name": "inference-platform.endpoints", "rules": endpoints})
    return groups


def alert_names(groups: list[dict[str, Any]]) -> set[str]:
    return {r["alert"] for g in groups for r in g["rules"] if "alert" in r}


def recorded_names(groups: list[dict[str, Any]]) -> set[str]:
    return {r["record"] for g in groups for r in g["rules"] if "record" in r}


# --------------------------------------------------------------------------- Alertmanager

NULL_RECEIVER = "null"
# The label sets that say what an alert is about: a critical alert silences the warnings about
# the same thing (a GPU node, a pod, a Triton service, a Ray graph), never about something else. Never a
# namespace or a scrape target alone: every DCGM series carries namespace=gpu-operator and
# service=nvidia-dcgm-exporter, every kube-state-metrics series the exporter's `service`, so
# those would let one node's or one volume's fault silence warnings cluster-wide.
INHIBIT_SCOPES = (("Hostname",), ("namespace", "pod"), ("namespace", SERVICE_LABEL), ("namespace", GRAPH_LABEL))


def _receiver_config(receiver: AlertReceiver, secret: str) -> dict[str, Any]:
    """One Alertmanager receiver; `secret` is the kind's credential (fields valid in 0.25 and 0.34)."""
    kind = receiver.kind
    spec = getattr(receiver, kind)
    if kind == "webhook":
        config = {"webhook_configs": [{"url": secret, "send_resolved": spec.send_resolved}]}
    elif kind == "slack":
        config = {"slack_configs": [{"api_url": secret, "channel": spec.channel, "send_resolved": spec.send_resolved,
                                     "title": '{{ .CommonLabels.severity }}: {{ .CommonLabels.alertname }}',
                                     "text": '{{ range .Alerts }}{{ .Annotations.summary }}\n{{ end }}'}]}
    elif kind == "email":
        config = {"email_configs": [{"to": spec.to, "from": spec.from_, "smarthost": spec.smarthost,
                                     "auth_username": spec.auth_username, "auth_password": secret,
                                     "require_tls": spec.require_tls}]}
    else:
        config = {"pagerduty_configs": [{"routing_key": secret, "send_resolved": spec.send_resolved}]}
    return {"name": receiver.name, **config}


def _severity_routes(severity: str, receivers: list[str]) -> list[dict[str, Any]]:
    # Every receiver of a severity gets the alert: all routes but the last continue matching.
    return [
        {"receiver": name, "matchers": [f'severity="{severity}"'], "continue": i < len(receivers) - 1}
        for i, name in enumerate(receivers)
    ]


def inhibit_rules() -> list[dict[str, Any]]:
    """A critical alert silences warnings about the same GPU node, pod, Triton service or graph. Each
    rule needs its labels on both sides: Alertmanager counts a label missing on both as equal."""
    return [
        {
            "source_matchers": ['severity="critical"', *(f'{label}=~".+"' for label in scope)],
            "target_matchers": ['severity="warning"', *(f'{label}=~".+"' for label in scope)],
            "equal": list(scope),
        }
        for scope in INHIBIT_SCOPES
    ]


def alertmanager_config(a: AlertingSettings, secrets: dict[str, str]) -> dict[str, Any]:
    """The whole Alertmanager configuration; `secrets` maps receiver names to their credentials.
    With no receivers every alert goes to `null` (kept in Alertmanager's UI, sent nowhere)."""
    routes = [{"receiver": NULL_RECEIVER, "matchers": ['alertname="Watchdog"']}]
    routes += _severity_routes("critical", a.critical) + _severity_routes("warning", a.warning)
    return {
        "global": {"resolve_timeout": "5m"},
        "route": {
            "receiver": NULL_RECEIVER,
            "group_by": ["alertname", "namespace", SERVICE_LABEL, GRAPH_LABEL],
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": a.repeat_interval,
            "routes": routes,
        },
        "inhibit_rules": inhibit_rules(),
        "receivers": [{"name": NULL_RECEIVER}] + [_receiver_config(r, secrets[r.name]) for r in a.receivers],
    }

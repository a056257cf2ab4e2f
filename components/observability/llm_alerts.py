"""Alerts about the routing of LLM services (`Service.llm_routed`, serving/llm_routing.py): their
own Gateway's answers, and the endpoint pickers in front of their InferencePools.

An LLM service's requests do not pass the customer gateway nor its Service: they leave the pods
istiod deploys for the service's Gateway (`source_workload` `<gateway>-istio`) for the headless
Service istiod keeps for each version's InferencePool (`destination_service`
`<pool>-ip-<hash>.<ns>.svc.cluster.local`; llm_routing.gateway_workload,
inference_pool_service_name). The gateway reports them as `reporter="source"`, the pods' sidecars
as `reporter="destination"` with the pods' Deployment as `destination_workload`. So the classic
ServiceRouteTimeouts and CanaryNotServing would select nothing here; these select what the LLM
path produces. A pool with no Ready pod answers 503 without a flag when its picker is the one the
route calls (llm-d-router v0.10.0 pkg/epp/requestcontrol/director.go: no endpoint candidates, an
ext_proc immediate response), and with `UH` when only its cluster is empty: the not-serving rule
counts every 503 to the pool.

Each picker is scraped by its release's ServiceMonitor, whose job is the picker's Service,
`<pool>-epp` (llm-d-router-gateway v0.10.0 charts/router/templates/_servicemonitor.yaml: its
`jobLabel` names no label of that Service, so prometheus-operator keeps the Service's name,
pkg/prometheus/promcfg.go); a picker that fails to read its pods' `/metrics` counts
`llm_d_epp_datalayer_poll_errors_total` (pkg/epp/metrics/llm_d_router_metrics.go; the same count
under the deprecated `llm_d_inference_scheduler_` prefix, metrics.go). Metric names: the Istio
reference catalogue and tests/catalogues/llm-d-router-epp.txt.
"""

from __future__ import annotations

from typing import Any

from inference_platform.core.endpoints import in_cluster_host
from inference_platform.observability.alert_rule import alert
from inference_platform.serving.llm_routing import (
    endpoint_picker_name,
    gateway_workload,
    inference_pool_service_name,
)
from inference_platform.settings.serving import Service, Version, deployment_name

POLL_ERRORS = "llm_d_epp_datalayer_poll_errors_total"


def _rate(selector: str) -> str:
    return f"sum(rate(istio_requests_total{{{selector}}}[5m]))"


def pool_host(service: Service, version: Version) -> str:
    return in_cluster_host(inference_pool_service_name(service, version), service.k8s_namespace)


def gateway_selector(service: Service, versions: list[Version]) -> str:
    """The requests the service's Gateway sends to the versions' pools."""
    hosts = "|".join(pool_host(service, v).replace(".", "\\\\.") for v in versions)
    return (f'reporter="source",source_workload="{gateway_workload(service)}",'
            f'source_workload_namespace="{service.k8s_namespace}",destination_service=~"{hosts}"')


def gateway_ratio_expr(service: Service, codes: str, ratio: float) -> str:
    """Share of the gateway's requests to the service's pools that end with a code of `codes` (a regex)."""
    to_pools = gateway_selector(service, list(service.versions))
    failed = _rate(f'{to_pools},response_code=~"{codes}"')
    return f"{failed} / {_rate(to_pools)} > {ratio:g}"


def llm_canary_not_serving_expr(service: Service, canary: Version) -> str:
    """The gateway answers 503 for the canary's pool while none of the canary's pods answers any
    request (a canary that got no request leaves no 503 behind, so it never pages)."""
    refused = _rate(f'{gateway_selector(service, [canary])},response_code="503"')
    answered = _rate(f'reporter="destination",destination_workload="{deployment_name(service, canary)}",'
                     f'destination_workload_namespace="{service.k8s_namespace}"')
    return f"({refused} > 0) unless on () ({answered} > 0)"


def picker_down_expr(service: Service, version: Version) -> str:
    """The picker's scrape fails, or it has no target at all (no pod behind its Service)."""
    up = f'up{{job="{endpoint_picker_name(service, version)}",namespace="{service.k8s_namespace}"}}'
    return f"({up} == 0) or absent({up})"


def picker_poll_errors_expr(service: Service) -> str:
    jobs = "|".join(endpoint_picker_name(service, v) for v in service.versions)
    return (f'sum by (namespace, job) (rate({POLL_ERRORS}{{namespace="{service.k8s_namespace}",job=~"{jobs}"}}[5m]))'
            f" > 0")


def llm_routing_rules(services: list[Service], service_label: str, ratio: float,
                      stable_and_canaries) -> list[dict[str, Any]]:
    """The rules of every LLM-routed service; `stable_and_canaries(service)` names its stable
    version and its canaries (alerts.py, by weight)."""
    rules = []
    for svc in services:
        if not svc.llm_routed:
            continue
        about = {"namespace": svc.k8s_namespace, service_label: svc.name}
        gateway = gateway_workload(svc)
        rules += [
            alert("ServiceRouteTimeouts", gateway_ratio_expr(svc, "504", ratio), "5m", "warning",
                  f"{svc.name}: {{{{ $value | humanizePercentage }}}} of its requests end 504 at its gateway "
                  f"{gateway}, cut by the route timeout ({svc.timeout_seconds:g} s)", **about),
            alert("LlmGatewayErrorRatioHigh", gateway_ratio_expr(svc, "5..", ratio), "5m", "critical",
                  f"{svc.name}: {{{{ $value | humanizePercentage }}}} of its requests end 5xx at its gateway "
                  f"{gateway} (503: a pool without a Ready pod, or its endpoint picker refusing)", **about),
            alert("EndpointPickerPollErrors", picker_poll_errors_expr(svc), "10m", "warning",
                  f"{svc.name}: endpoint picker {{{{ $labels.job }}}} cannot read its pods' /metrics "
                  "(llm_d_epp_datalayer_poll_errors_total)", **about),
        ]
        for version in svc.versions:
            rules.append(alert(
                "EndpointPickerDown", picker_down_expr(svc, version), "5m", "warning",
                f"{svc.name} {version.name}: endpoint picker {endpoint_picker_name(svc, version)} is not scraped "
                f"(down or no pod); with failureMode {svc.llm_routing.failure_mode} the gateway "
                + ("refuses" if svc.llm_routing.failure_mode == "FailClose" else "routes without it")
                + " when the picker it calls does not answer", version=version.name, **about))
        stable, canaries = stable_and_canaries(svc)
        versions = {v.name: v for v in svc.versions}
        for canary in canaries:
            # No weight in the text: a weight shift must change only the HTTPRoute.
            rules.append(alert(
                "CanaryNotServing", llm_canary_not_serving_expr(svc, versions[canary]), "5m", "critical",
                f"{svc.name} {canary} gets traffic but answers none of it: its InferencePool has no Ready pod "
                f"(its gateway answers 503)", canary_version=canary, stable_version=stable, **about))
    return rules

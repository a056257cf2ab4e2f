"""Burn-rate alerts on the latency objectives of LLM services (`llmObjectives`).

The share of a service's requests slower than an objective, read from the engines' latency
histograms at the objective's bucket bound, is the rate its error budget (1 - target) burns.
Alerts follow the multiwindow, multi-burn-rate recipe of Google's SRE workbook ("Alerting on
SLOs", table 5-8): page when 2% of a 30-day budget goes within an hour (burn rate 14.4 over 1 h
and over 5 min), open a ticket when 5% goes within six hours (6 over 6 h and over 30 min). The
short window makes an alert stop soon after the burn does.
"""

from __future__ import annotations

from typing import Any

from inference_platform.settings.serving import Service

# (severity, burn rate, long window, short window)
BURN_RATE_WINDOWS = (("critical", 14.4, "1h", "5m"), ("warning", 6, "6h", "30m"))
# objective -> engine -> (histogram, its unit in ms); settings/llm.py lists the bounds.
HISTOGRAMS: dict[str, dict[str, tuple[str, float]]] = {
    "time to first token": {
        "vllm": ("vllm:time_to_first_token_seconds", 1000),
        # Triton core's first response of a decoupled model (needs --metrics-config histogram_latencies=true).
        "tensorrtllm": ("nv_inference_first_response_histogram_ms", 1),
    },
    "inter-token latency": {"vllm": ("vllm:time_per_output_token_seconds", 1000)},
}
ALERT_NAMES = {"time to first token": "LlmTimeToFirstTokenBudgetBurn", "inter-token latency": "LlmInterTokenLatencyBudgetBurn"}


def le_matcher(bound: float) -> str:
    """A regex for a bucket bound as exporters write it ("1", "2.5") and as Prometheus 3
    normalises classic-histogram `le` values on ingestion ("1.0")."""
    text = f"{bound:g}"
    return f"{text}|{text}\\\\.0" if "." not in text and "e" not in text else text.replace(".", "\\\\.")


def slow_ratio_expr(service: Service, objective: str, bound_ms: float, window: str) -> str:
    """Share of the service's requests over `bound_ms`, over `window`, across its LLM engines."""
    pods = (f'on (namespace, pod) group_left () kube_pod_labels{{namespace="{service.k8s_namespace}",'
            f'label_app="{service.name}"}}')
    engines = sorted({v.llm.engine for v in service.versions if v.llm is not None})
    within, total = [], []
    for engine in engines:
        histogram, unit_ms = HISTOGRAMS[objective][engine]
        le = le_matcher(bound_ms / unit_ms)
        within.append(f'rate({histogram}_bucket{{le=~"{le}"}}[{window}]) * {pods}')
        total.append(f"rate({histogram}_count[{window}]) * {pods}")
    return f"1 - sum({' or '.join(within)}) / sum({' or '.join(total)})"


def burn_alert_expr(service: Service, objective: str, bound_ms: float, target: float, burn: float,
                    long: str, short: str) -> str:
    budget = 1 - target
    return " and ".join(f"({slow_ratio_expr(service, objective, bound_ms, w)}) / {budget:g} > {burn:g}" for w in (long, short))


def objective_rules(services: list[Service], service_label: str) -> list[dict[str, Any]]:
    rules = []
    for svc in services:
        o = svc.llm_objectives
        if o is None:
            continue
        for objective, bound in (("time to first token", o.time_to_first_token_ms), ("inter-token latency", o.inter_token_latency_ms)):
            if bound is None:
                continue
            for severity, burn, long, short in BURN_RATE_WINDOWS:
                rules.append({
                    "alert": ALERT_NAMES[objective],
                    "expr": burn_alert_expr(svc, objective, bound, o.target, burn, long, short),
                    "labels": {"severity": severity, "namespace": svc.k8s_namespace, service_label: svc.name},
                    "annotations": {"summary": (
                        f"{svc.name}: {objective} above {bound:g} ms burns the error budget of its {o.target:g} objective "
                        f"{burn:g}x too fast (over {long} and {short})")},
                })
    return rules

"""prometheus-adapter's templating of a metricsQuery, for tests that evaluate the rules."""

from __future__ import annotations


def templated(query: str, series: str, namespace: str, pods: list[str], metric_selector: dict | None = None) -> str:
    """A metricsQuery as prometheus-adapter v0.12.0 renders it for a pod-metric request
    (pkg/naming/metrics_query.go Build): the HPA metric selector's matchers, then the
    namespace, then the pods (`=` for one, `=~` for several); GroupBy is the pod label."""
    matchers = [f'{k}="{v}"' for k, v in (metric_selector or {}).get("matchLabels", {}).items()]
    matchers.append(f'namespace="{namespace}"')
    matchers.append(f'pod="{pods[0]}"' if len(pods) == 1 else f'pod=~"{"|".join(pods)}"')
    return query.replace("<<.Series>>", series).replace("<<.LabelMatchers>>", ",".join(matchers)).replace("<<.GroupBy>>", "pod")

"""checkov's findings on the objects the Helm charts install, each with why it stays.

The objects the platform renders itself are exempted in hardening.py, on the objects; the
charts' objects cannot carry annotations of ours, so their exceptions are recorded here by
chart, check and the chart's objects (`Kind/name` patterns), and the hardening test over the
charts (tests/conformance/test_chart_hardening.py) wants every finding covered and every
entry used. What the platform changed in the charts' values for hardening (Grafana's test pod
off, NetworkPolicies for the internet-facing Grafana and Kiali) is in their components.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatch


@dataclass(frozen=True)
class ChartExemption:
    checks: tuple[str, ...]
    """checkov check ids."""
    reason: str
    objects: tuple[str, ...] = ("*",)
    """`Kind/name` patterns of the chart's objects it covers (fnmatch)."""

    def covers(self, check: str, obj: str) -> bool:
        return check in self.checks and any(fnmatch(obj, p) for p in self.objects)


_TAG = ("images pinned by tag through the chart version versions.py pins; an upgrade is an edit of that "
        "version, and the chart's images name tags, not digests")
_PULL = "the chart's IfNotPresent on tag-pinned images; Always would make every restart wait on the registry"
_NO_CPU_LIMIT = "no CPU limit: CFS throttling stalls a controller or exporter in bursts; the platform sets none on purpose"
_SIZE = ("the chart sets no requests or limits by default and the right size grows with the cluster (objects "
         "watched, series, log volume): a guess would starve or OOM-kill it; size it through the chart's "
         "`resources` value per cluster")
_API = "talks to the Kubernetes API ({}): it needs its service-account token"
_UID = "runs as its image's own non-root user, below 10000, which owns its files; the chart offers no other"
_SYSTEM_NP = ("no NetworkPolicy in this system namespace: a default deny there would also cut the API server's "
              "calls to webhooks and APIServices on CNIs that filter node traffic; the internet-facing UIs "
              "(Grafana, Kiali) have theirs")
_DEFAULTS = ("kept at the chart's default security context, which sets no seccomp profile, capability drop "
             "or read-only root; the pinned chart's values were not overridden here")

CHART_EXEMPTIONS: dict[str, tuple[ChartExemption, ...]] = {
    "alloy": (
        ChartExemption(("CKV_K8S_43",), _TAG), ChartExemption(("CKV_K8S_15",), _PULL),
        ChartExemption(("CKV_K8S_10", "CKV_K8S_11", "CKV_K8S_12", "CKV_K8S_13"), _SIZE),
        ChartExemption(("CKV_K8S_20", "CKV_K8S_22", "CKV_K8S_23", "CKV_K8S_28", "CKV_K8S_29", "CKV_K8S_30",
                        "CKV_K8S_31", "CKV_K8S_37", "CKV_K8S_40"),
                       "Alloy tails every container's log files under /var/log/pods on its node, which root owns: "
                       "it keeps the chart's default security context (the image's root user)"),
        ChartExemption(("CKV_K8S_38",), _API.format("discovers the pods whose logs it ships")),
        ChartExemption(("CKV_K8S_8", "CKV_K8S_9"), "the chart gives Alloy a readiness probe only and its config "
                       "reloader none; the kubelet restarts either if it exits"),
        ChartExemption(("CKV2_K8S_6",), _SYSTEM_NP),
    ),
    "argo-workflows": (
        ChartExemption(("CKV_K8S_43",), _TAG), ChartExemption(("CKV_K8S_11",), _NO_CPU_LIMIT),
        ChartExemption(("CKV_K8S_38",), _API.format("runs the pipelines' Workflows as pods")),
        ChartExemption(("CKV_K8S_40",), _UID),
        ChartExemption(("CKV_K8S_9",), "the chart gives the workflow controller a liveness probe only; it serves no traffic to gate"),
    ),
    "gateway": (
        ChartExemption(("CKV_K8S_43",), _TAG),
        ChartExemption(("CKV_K8S_14",), "image `auto`: istiod's injector replaces it with the proxy image of the "
                                        "running control plane when the pod is created (gateway chart, injection template)"),
        ChartExemption(("CKV_K8S_8", "CKV_K8S_9"), "istiod's injector writes the proxy container, probes included, "
                       "when the pod is created; the chart's container is a placeholder"),
        ChartExemption(("CKV_K8S_31",), _DEFAULTS),
        ChartExemption(("CKV_K8S_38",), _API.format("its proxy's certificates and TLS Secrets come through istiod")),
        ChartExemption(("CKV_K8S_40",), "runs as the proxy's uid 1337, which Istio's traffic capture is keyed on"),
        ChartExemption(("CKV2_K8S_5",), "the gateway reads the TLS Secrets of its own namespace (SDS): the chart's Role"),
        ChartExemption(("CKV2_K8S_6",), "the internet-facing ingress gateway takes traffic from anywhere by design"),
    ),
    "gpu-operator": (
        ChartExemption(("CKV_K8S_43",), _TAG), ChartExemption(("CKV_K8S_15",), _PULL),
        ChartExemption(("CKV_K8S_11",), _NO_CPU_LIMIT),
        ChartExemption(("CKV_K8S_10", "CKV_K8S_12", "CKV_K8S_13"),
                       "Helm hook Jobs (cleanup, CRD upgrade) run once for seconds; the chart sizes them not"),
        ChartExemption(("CKV_K8S_20", "CKV_K8S_22", "CKV_K8S_23", "CKV_K8S_28", "CKV_K8S_29", "CKV_K8S_30",
                        "CKV_K8S_31", "CKV_K8S_37", "CKV_K8S_40"),
                       "the GPU operator manages host drivers, device plugins and CRDs and runs as the chart makes "
                       "it (root); NFD reads the node's devices"),
        ChartExemption(("CKV_K8S_38",), _API.format("the operator, NFD and their Jobs manage nodes, labels and CRDs")),
        ChartExemption(("CKV2_K8S_6",), _SYSTEM_NP),
    ),
    "jaeger": (
        ChartExemption(("CKV_K8S_43",), _TAG), ChartExemption(("CKV_K8S_15",), _PULL),
        ChartExemption(("CKV_K8S_10", "CKV_K8S_11", "CKV_K8S_12", "CKV_K8S_13"), _SIZE),
        ChartExemption(("CKV_K8S_20", "CKV_K8S_22", "CKV_K8S_28", "CKV_K8S_31", "CKV_K8S_37"), _DEFAULTS),
        ChartExemption(("CKV_K8S_38",), "no token is mounted: the platform turns automount off on the chart's "
                       "ServiceAccount (jaeger.serviceAccount.automountServiceAccountToken), which the pod inherits; "
                       "checkov reads the pod spec only"),
        ChartExemption(("CKV2_K8S_6",), _SYSTEM_NP),
    ),
    "kiali-server": (
        ChartExemption(("CKV_K8S_43",), _TAG), ChartExemption(("CKV_K8S_11",), _NO_CPU_LIMIT),
        ChartExemption(("CKV_K8S_29",), _DEFAULTS),
        ChartExemption(("CKV_K8S_38",), _API.format("reads the mesh's objects to draw it")),
        ChartExemption(("CKV_K8S_40",), _UID),
    ),
    "kube-prometheus-stack": (
        ChartExemption(("CKV_K8S_43",), _TAG), ChartExemption(("CKV_K8S_15",), _PULL),
        ChartExemption(("CKV_K8S_11",), _NO_CPU_LIMIT),
        ChartExemption(("CKV_K8S_10", "CKV_K8S_12", "CKV_K8S_13"), _SIZE),
        ChartExemption(("CKV_K8S_17", "CKV_K8S_19", "CKV_K8S_20", "CKV_K8S_28", "CKV_K8S_31", "CKV_K8S_37"),
                       "node-exporter measures the host: its PID and network namespaces and /proc are what it reads",
                       ("DaemonSet/*-prometheus-node-exporter",)),
        ChartExemption(("CKV_K8S_22",), _DEFAULTS, ("Deployment/*-grafana",)),
        ChartExemption(("CKV_K8S_8", "CKV_K8S_9"), "the chart's dashboard and datasource sidecars have no probes "
                       "(Grafana itself has both)", ("Deployment/*-grafana",)),
        ChartExemption(("CKV_K8S_35",), "Grafana takes its OIDC client secret only from the environment or grafana.ini "
                       "(GF_AUTH_GENERIC_OAUTH_CLIENT_SECRET); it comes from a Secret, never a literal",
                       ("Deployment/*-grafana",)),
        ChartExemption(("CKV_K8S_38",), _API.format("the operator manages Prometheus and Alertmanager, kube-state-metrics "
                       "lists every object, Grafana's sidecars read dashboard ConfigMaps, the admission Jobs patch webhooks")),
        ChartExemption(("CKV_K8S_40",), _UID),
        ChartExemption(("CKV_K8S_49", "CKV_K8S_155"), "the Prometheus operator manages its own CRDs' objects "
                       "and the admission webhooks the chart's Jobs register: the chart's ClusterRoles",
                       ("ClusterRole/*-operator", "ClusterRole/*-admission")),
        ChartExemption(("CKV2_K8S_5",), "Grafana's dashboard sidecar and the admission Jobs read Secrets and "
                       "ConfigMaps as the chart binds them", ("ClusterRoleBinding/*-grafana-clusterrolebinding",
                                                                "RoleBinding/*-admission")),
        ChartExemption(("CKV2_K8S_6",), _SYSTEM_NP),
    ),
    "kuberay-operator": (
        ChartExemption(("CKV_K8S_43",), _TAG), ChartExemption(("CKV_K8S_15",), _PULL),
        ChartExemption(("CKV_K8S_29",), _DEFAULTS),
        ChartExemption(("CKV_K8S_38",), _API.format("runs the graphs' Ray clusters")),
        ChartExemption(("CKV_K8S_40",), _UID),
    ),
    "loki": (
        ChartExemption(("CKV_K8S_43",), _TAG), ChartExemption(("CKV_K8S_15",), _PULL),
        ChartExemption(("CKV_K8S_10", "CKV_K8S_11", "CKV_K8S_12", "CKV_K8S_13"), _SIZE),
        ChartExemption(("CKV_K8S_38",), _API.format("its rules sidecar reads ConfigMaps")),
        ChartExemption(("CKV2_K8S_5",), "the rules sidecar reads ConfigMaps and Secrets as the chart binds it"),
        ChartExemption(("CKV2_K8S_6",), _SYSTEM_NP),
    ),
    "prometheus-adapter": (
        ChartExemption(("CKV_K8S_43",), _TAG), ChartExemption(("CKV_K8S_15",), _PULL),
        ChartExemption(("CKV_K8S_10", "CKV_K8S_11", "CKV_K8S_12", "CKV_K8S_13"), _SIZE),
        ChartExemption(("CKV_K8S_38",), _API.format("serves the custom metrics API and reads pods and namespaces")),
        ChartExemption(("CKV_K8S_49",), "the chart's resource-reader ClusterRole of the metrics API it serves"),
        ChartExemption(("CKV2_K8S_1", "CKV2_K8S_2", "CKV2_K8S_3", "CKV2_K8S_4", "CKV2_K8S_5"),
                       "binds the cluster's HPA controller to the custom metrics the adapter serves, as HPAs need "
                       "(checkov reads the controller's own broad role through the binding)",
                       ("ClusterRoleBinding/*-hpa-controller",)),
        ChartExemption(("CKV2_K8S_6",), _SYSTEM_NP),
    ),
}


def chart_exemption(chart: str, check: str, obj: str):
    """The entry that covers `check` on the chart's object `Kind/name`, or None."""
    return next((e for e in CHART_EXEMPTIONS.get(chart, ()) if e.covers(check, obj)), None)


def reference() -> str:
    """The table of the charts' recorded exceptions in docs/policies.md."""
    rows = ["| chart | checks | objects | reason |", "|---|---|---|---|"]
    for chart, entries in CHART_EXEMPTIONS.items():
        for e in entries:
            objects = "every object" if e.objects == ("*",) else ", ".join(f"`{o}`" for o in e.objects)
            rows.append(f"| {chart} | {', '.join(f'`{c}`' for c in e.checks)} | {objects} | {e.reason.replace('|', '/')} |")
    return "\n".join(rows) + "\n"

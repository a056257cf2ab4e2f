"""Observability: kube-prometheus-stack (Prometheus, Alertmanager, Grafana,
kube-state-metrics), prometheus-adapter, Loki, Alloy, dashboards and alert rules.

kube-prometheus-stack installs the ServiceMonitor/PodMonitor/PrometheusRule CRDs,
so every monitoring custom resource (here and in the Triton services) depends on
its release. Its Prometheus selects monitors and rules from every namespace and
every release, not only its own Helm labels.

prometheus-adapter serves Triton's per-pod average queue time under the name the
Triton HPAs use (components.metrics.QUEUE_TIME_METRIC). Grafana provisions the
dashboards in ../dashboards through its sidecar, which picks up every ConfigMap
labelled `grafana_dashboard: "1"`.
"""

import json
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random
import yaml

from inference_platform.args import ObservabilityArgs
from inference_platform.cluster import autoscaler
from inference_platform.core import common, versions
from inference_platform.core import endpoints as ep
from inference_platform.core.common import init_component, resource_opts, shipped_dir, standard_labels, with_node_selector
from inference_platform.observability import alerts
from inference_platform.observability.inputs import ObservabilityInputs
from inference_platform.observability.metrics import (
    PENDING_REQUESTS_METRIC,
    QUEUE_TIME_METRIC,
    REQUEST_RATE_METRIC,
    TRITON_MODEL_LABEL,
    TRTLLM_ACTIVE_METRIC,
    TRTLLM_KV_CACHE_METRIC,
    VLLM_IN_FLIGHT_METRIC,
)
from inference_platform.settings.component_args import validated
from inference_platform.settings.graphs import Graph
from inference_platform.settings.serving import Service
from inference_platform.settings.weights import loki_bucket_name
from inference_platform.timing.readiness import chart_timeout
from inference_platform.weights.s3.bucket import S3Bucket

DASHBOARDS_DIR = shipped_dir("dashboards")
# Panels of the LLM backends' metrics (dashboards/llm.json), empty without such a backend.
LLM_DASHBOARD = "llm"
# Panels of Ray Serve's metrics (dashboards/graphs.json), empty without a graph on Ray.
GRAPHS_DASHBOARD = "graphs"
# Panels of TrainJobs and Kueue's queues (dashboards/training.json), empty without training teams.
TRAINING_DASHBOARD = "training"
# The sidecar label as kube-prometheus-stack configures it for its Grafana.
DASHBOARD_LABEL = "grafana_dashboard"
DASHBOARD_LABEL_VALUE = "1"
GRAFANA_ADMIN_SECRET = "grafana-admin"
# Grafana's OIDC client secret; Grafana reads it from the environment (GF_<SECTION>_<KEY>),
# so it stays out of the Helm values and grafana.ini.
GRAFANA_OIDC_SECRET = "grafana-oidc"
GRAFANA_OIDC_SECRET_KEY = "client-secret"
GRAFANA_OIDC_SECRET_ENV = "GF_AUTH_GENERIC_OAUTH_CLIENT_SECRET"
# Alertmanager's whole configuration, receivers' credentials included, lives in a Secret of
# ours (key alertmanager.yaml, as the operator reads it), never in Helm values. It bears the name
# the operator reads by default, alertmanager-<Alertmanager name>; the chart names its
# Alertmanager <fullname>-alertmanager, and fullname is the release name when that contains the
# chart's name (templates/_helpers.tpl, kube-prometheus-stack 88.5.3).
ALERTMANAGER_NAME = f"{ep.KUBE_PROMETHEUS_RELEASE}-alertmanager"
ALERTMANAGER_CONFIG_SECRET = f"alertmanager-{ALERTMANAGER_NAME}"
ALERTMANAGER_CONFIG_KEY = "alertmanager.yaml"
LOKI_S3_SECRET = "loki-s3"
# Pod and node labels kube-state-metrics exposes (as label_<name>) for dashboards and alerts.
POD_LABELS = ("app", "version")
# The schema's first day; it must not move once Loki has stored data.
LOKI_SCHEMA_FROM = "2025-01-01"
ADAPTER_WINDOW = "2m"


# --------------------------------------------------------------------------- values


def _claim_spec(size: str, storage_class: Optional[str]) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if storage_class:
        spec["storageClassName"] = storage_class
    return spec


def datasources(mesh_urls: dict[str, str]) -> list[dict[str, Any]]:
    """Grafana datasources besides the chart's own Prometheus (uid `prometheus`)."""
    sources = [{"name": "Loki", "uid": "loki", "type": "loki", "access": "proxy", "url": ep.LOKI_URL}]
    if "jaeger" in mesh_urls:
        sources.append({"name": "Jaeger", "uid": "jaeger", "type": "jaeger", "access": "proxy", "url": mesh_urls["jaeger"]})
    return sources


def grafana_ini(a: ObservabilityInputs) -> dict[str, Any]:
    """grafana.ini sections for a Grafana served on its own host: its public root URL (links,
    redirects, the OAuth callback) and, with auth `oidc`, the generic OAuth login."""
    ui = a.ui.grafana
    if ui is None:
        return {}
    tls = a.tls
    ini: dict[str, Any] = {"server": {"root_url": ep.external_url(ui.host, tls)}}
    if tls:
        ini["security"] = {"cookie_secure": True}
    if ui.oidc is not None:
        oauth: dict[str, Any] = {
            "enabled": True,
            "name": "Single sign-on",
            "client_id": ui.oidc.client_id,
            "scopes": " ".join(ui.oidc.scopes),
            "auth_url": ui.oidc.auth_url,
            "token_url": ui.oidc.token_url,
            "api_url": ui.oidc.api_url,
            "use_pkce": True,
            "allow_sign_up": True,
        }
        if ui.oidc.role_attribute_path:
            oauth["role_attribute_path"] = ui.oidc.role_attribute_path
        ini["auth.generic_oauth"] = oauth
        # Users sign in through the identity provider only: no password form on the public host.
        # Basic auth on the API stays: the chart's sidecars reload dashboards and datasources
        # through it with the admin credential (kube-prometheus-stack 88.5.3 charts/grafana
        # templates/_pod.tpl REQ_USERNAME, REQ_URL = sidecar.*.reloadURL), and it is the admin's
        # way back in should the identity provider fail.
        ini["auth"] = {"disable_login_form": True}
    return ini


def grafana_values(a: ObservabilityInputs) -> dict[str, Any]:
    """The grafana subchart's values inside kube-prometheus-stack."""
    values: dict[str, Any] = {
        "admin": {"existingSecret": GRAFANA_ADMIN_SECRET, "userKey": "admin-user", "passwordKey": "admin-password"},
        "sidecar": {
            "dashboards": {
                "enabled": True,
                "label": DASHBOARD_LABEL,
                "labelValue": DASHBOARD_LABEL_VALUE,
                "searchNamespace": "ALL",
            }
        },
        "additionalDataSources": datasources(a.mesh_urls),
    }
    ini = grafana_ini(a)
    if ini:
        values["grafana.ini"] = ini
    if "auth.generic_oauth" in ini:
        values["envValueFrom"] = {
            GRAFANA_OIDC_SECRET_ENV: {"secretKeyRef": {"name": GRAFANA_OIDC_SECRET, "key": GRAFANA_OIDC_SECRET_KEY}}
        }
    return values


# kube-prometheus-stack 88.5.3 values.yaml: the nodeSelector of every pod it runs but the node exporter
# (a DaemonSet that tolerates every NoSchedule taint, charts/prometheus-node-exporter). The admission
# webhook's patch Job runs at install; its Deployment (admissionWebhooks.deployment) is off.
KUBE_PROMETHEUS_NODE_SELECTORS = (
    "prometheus.prometheusSpec.nodeSelector",
    "alertmanager.alertmanagerSpec.nodeSelector",
    "prometheusOperator.nodeSelector",
    "prometheusOperator.admissionWebhooks.patch.nodeSelector",
    "grafana.nodeSelector",
    "kube-state-metrics.nodeSelector",
)


def grafana_network_policy_spec(a: ObservabilityInputs) -> dict[str, Any]:
    """Grafana's port admits the ingress gateway when the gateway serves Grafana's host
    (`ui.grafana`), Kiali (its Grafana links, external_services.grafana) and the monitoring
    namespace (the chart's ServiceMonitor); its gossip (9094) and profiling (6060) ports nothing."""
    peers = common.from_namespace(ep.MONITORING_NAMESPACE)
    if a.mesh_installed:
        peers.append(common.from_pods(ep.ISTIO_NAMESPACE, ep.KIALI_POD_LABELS))
        if a.ui.grafana is not None:
            peers.append(common.from_pods(ep.ISTIO_NAMESPACE, ep.INGRESS_POD_LABELS))
    return common.ingress_only_spec(ep.GRAFANA_POD_LABELS, [(ep.GRAFANA_CONTAINER_PORT, peers)])


# The prometheus-operator labels the pods of every Prometheus and Alertmanager it runs with their
# app name, a label podMetadata cannot override (kube-prometheus-stack 88.5.3 charts/crds
# crd-prometheuses.yaml and crd-alertmanagers.yaml, podMetadata).
PROMETHEUS_POD_LABELS = {"app.kubernetes.io/name": "prometheus"}
ALERTMANAGER_POD_LABELS = {"app.kubernetes.io/name": "alertmanager"}
# loki 18.11.0 templates/_helpers.tpl loki.selectorLabels (the chart's name, no nameOverride):
# the single binary and its caches and canary, all in the monitoring namespace.
LOKI_POD_LABELS = {"app.kubernetes.io/name": "loki", "app.kubernetes.io/instance": ep.LOKI_RELEASE}
# kube-prometheus-stack 88.5.3 charts/kube-state-metrics/templates/_helpers.tpl:79-86 and
# alloy 1.11.1 templates/_helpers.tpl:70-73 (selectorLabels: the chart's name and the release).
KUBE_STATE_METRICS_POD_LABELS = {"app.kubernetes.io/name": "kube-state-metrics", "app.kubernetes.io/instance": ep.KUBE_PROMETHEUS_RELEASE}
ALLOY_POD_LABELS = {"app.kubernetes.io/name": "alloy", "app.kubernetes.io/instance": ep.ALLOY_RELEASE}


def backend_network_policy_specs(a: ObservabilityInputs) -> dict[str, dict[str, Any]]:
    """Prometheus, Alertmanager and Loki admit only the monitoring namespace (Grafana,
    prometheus-adapter, Alloy, each other, the scrapes of their own metrics) and Prometheus Kiali
    too (its graphs, external_services.prometheus): no other pod of the cluster reads every metric
    or every log, pushes logs, or creates and silences alerts. kube-state-metrics (every object's
    names and labels) and Alloy's HTTP server (its UI, configuration and metrics) admit only the
    monitoring namespace, whose Prometheus scrapes them. Ports are not listed: every one of
    theirs (web, gossip, config reloader) is the monitoring namespace's."""
    prometheus_peers = common.from_namespace(ep.MONITORING_NAMESPACE)
    if a.mesh_installed:
        prometheus_peers.append(common.from_pods(ep.ISTIO_NAMESPACE, ep.KIALI_POD_LABELS))

    def admitting(selector: dict[str, str], peers: list[dict]) -> dict[str, Any]:
        return {"podSelector": {"matchLabels": dict(selector)}, "policyTypes": ["Ingress"], "ingress": [{"from": peers}]}

    return {"prometheus": admitting(PROMETHEUS_POD_LABELS, prometheus_peers),
            "alertmanager": admitting(ALERTMANAGER_POD_LABELS, common.from_namespace(ep.MONITORING_NAMESPACE)),
            "loki": admitting(LOKI_POD_LABELS, common.from_namespace(ep.MONITORING_NAMESPACE)),
            "kube-state-metrics": admitting(KUBE_STATE_METRICS_POD_LABELS, common.from_namespace(ep.MONITORING_NAMESPACE)),
            "alloy": admitting(ALLOY_POD_LABELS, common.from_namespace(ep.MONITORING_NAMESPACE))}


def kube_prometheus_values(a: ObservabilityInputs) -> dict[str, Any]:
    o = a.observability
    allow_pods = ",".join(POD_LABELS)
    return with_node_selector({
        "prometheus": {
            "prometheusSpec": {
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "podMonitorSelectorNilUsesHelmValues": False,
                "ruleSelectorNilUsesHelmValues": False,
                "retention": o.prometheus_retention,
                "storageSpec": {"volumeClaimTemplate": {"spec": _claim_spec(o.prometheus_storage_size, o.storage_class)}},
            }
        },
        "alertmanager": alertmanager_values(),
        "grafana": grafana_values(a),
        "kube-state-metrics": {
            "metricLabelsAllowlist": [f"pods=[{allow_pods}]", f"nodes=[{alerts.GROUP_LABEL}]"],
        },
    }, a.system_node_selector, *KUBE_PROMETHEUS_NODE_SELECTORS)


def queue_time_query(window: str = ADAPTER_WINDOW) -> str:
    """Per-pod queue time as prometheus-adapter templates it: microseconds of queueing per
    successful request of each model, then the pod's worst model.

    Per model, because Triton counts every model's requests on its own series: an ensemble
    request adds one success to the ensemble (whose own queue time is near zero) and one to
    each composing model, so a pod-wide ratio divides the bottleneck's queue by the number of
    steps. An HPA metric selector (`model=...`) reaches <<.LabelMatchers>> and leaves that model only.
    """
    per_model = f"<<.GroupBy>>,{TRITON_MODEL_LABEL}"
    queued = f"sum by ({per_model}) (rate(<<.Series>>{{<<.LabelMatchers>>}}[{window}]))"
    # clamp_min: an idle model (no successes in the window) reads 0, not NaN.
    served = f"clamp_min(sum by ({per_model}) (rate(nv_inference_request_success{{<<.LabelMatchers>>}}[{window}])), 0.001)"
    return f"max by (<<.GroupBy>>) ({queued} / {served})"


def pending_requests_query() -> str:
    """Per-pod backlog as prometheus-adapter templates it: requests waiting per model (summed
    over the model's versions), then the pod's worst model; a metric selector leaves one model."""
    per_model = f"sum by (<<.GroupBy>>,{TRITON_MODEL_LABEL}) (<<.Series>>{{<<.LabelMatchers>>}})"
    return f"max by (<<.GroupBy>>) ({per_model})"


def alertmanager_values() -> dict[str, Any]:
    """The chart creates no configuration Secret of its own; Alertmanager reads ours."""
    return {"alertmanagerSpec": {"useExistingSecret": True}}


def alertmanager_config_text(a: ObservabilityInputs) -> str:
    secrets = {name: value.get_secret_value() for name, value in a.alert_receiver_secrets.items()}
    return yaml.safe_dump(alerts.alertmanager_config(a.observability.alerting, secrets), sort_keys=False)


def adapter_rules() -> list[dict[str, Any]]:
    """prometheus-adapter custom-metrics rules: per-pod Triton queue time, backlog and request rate."""
    resources = {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}}
    return [
        {
            "seriesQuery": 'nv_inference_queue_duration_us{namespace!="",pod!=""}',
            "resources": resources,
            "name": {"matches": "^nv_inference_queue_duration_us$", "as": QUEUE_TIME_METRIC},
            "metricsQuery": queue_time_query(),
        },
        {
            "seriesQuery": 'nv_inference_pending_request_count{namespace!="",pod!=""}',
            "resources": resources,
            "name": {"matches": "^nv_inference_pending_request_count$", "as": PENDING_REQUESTS_METRIC},
            "metricsQuery": pending_requests_query(),
        },
        *llm_adapter_rules(resources),
        {
            "seriesQuery": 'nv_inference_request_success{namespace!="",pod!=""}',
            "resources": resources,
            "name": {"matches": "^nv_inference_request_success$", "as": REQUEST_RATE_METRIC},
            "metricsQuery": f"sum by (<<.GroupBy>>) (rate(<<.Series>>{{<<.LabelMatchers>>}}[{ADAPTER_WINDOW}]))",
        },
    ]


def llm_adapter_rules(resources: dict[str, Any]) -> list[dict[str, Any]]:
    """The LLM engines' own load per pod (metrics.py): what an LLM version's HPA scales on,
    since a TensorRT-LLM or vLLM backend takes each request at once and Triton's queue stays empty."""
    def trtllm(label: str, value: str) -> str:
        return f'sum by (<<.GroupBy>>) (<<.Series>>{{<<.LabelMatchers>>,{label}="{value}"}})'

    def rule(series: str, name: str, query: str) -> dict[str, Any]:
        return {"seriesQuery": f'{{__name__="{series}",namespace!="",pod!=""}}', "resources": resources,
                "name": {"matches": f"^{series}$", "as": name}, "metricsQuery": query}

    kv = "kv_cache_block_type"
    return [
        rule("nv_trt_llm_request_metrics", TRTLLM_ACTIVE_METRIC, trtllm("request_type", "active")),
        rule("nv_trt_llm_kv_cache_block_metrics", TRTLLM_KV_CACHE_METRIC,
             f"{trtllm(kv, 'used')} / clamp_min({trtllm(kv, 'max')}, 1)"),
        rule("vllm:e2e_request_latency_seconds_sum", VLLM_IN_FLIGHT_METRIC,
             f"sum by (<<.GroupBy>>) (rate(<<.Series>>{{<<.LabelMatchers>>}}[{ADAPTER_WINDOW}]))"),
    ]


def adapter_values(system_node_selector: Optional[dict[str, str]] = None) -> dict[str, Any]:
    return with_node_selector({
        "prometheus": {"url": f"http://{ep.PROMETHEUS_HOST}", "port": ep.PROMETHEUS_PORT},
        "rules": {"default": False, "custom": adapter_rules()},
    }, system_node_selector or {}, "nodeSelector")


def loki_values(a: ObservabilityInputs) -> dict[str, Any]:
    o = a.observability
    store = "s3" if o.loki_storage == "s3" else "filesystem"
    loki: dict[str, Any] = {
        "auth_enabled": False,
        "commonConfig": {"replication_factor": 1},
        "schemaConfig": {
            "configs": [
                {
                    "from": LOKI_SCHEMA_FROM,
                    "store": "tsdb",
                    "object_store": store,
                    "schema": "v13",
                    "index": {"prefix": "index_", "period": "24h"},
                }
            ]
        },
        "limits_config": {"retention_period": o.loki_retention},
        "compactor": {"retention_enabled": True, "delete_request_store": store},
    }
    single: dict[str, Any] = {
        "replicas": 1,
        "persistence": {"enabled": True, "size": o.loki_storage_size, "storageClass": o.storage_class},
    }
    # loki 18.11.0 values.yaml singleBinary.nodeSelector: the only Loki pods of a Monolithic install.
    with_node_selector(single, a.system_node_selector, "nodeSelector")
    if store == "s3":
        s3 = a.weights_s3
        bucket = loki_bucket_name(s3.bucket)
        loki["storage"] = {
            "type": "s3",
            "bucketNames": {"chunks": bucket, "ruler": bucket, "admin": bucket},
            "s3": {
                "endpoint": s3.endpoint,
                "region": s3.region,
                # Expanded by Loki from the environment, so the keys stay in a Secret.
                "accessKeyId": "${LOKI_S3_ACCESS_KEY_ID}",
                "secretAccessKey": "${LOKI_S3_SECRET_ACCESS_KEY}",
                "s3ForcePathStyle": True,
            },
        }
        single["extraArgs"] = ["-config.expand-env=true"]
        single["extraEnvFrom"] = [{"secretRef": {"name": LOKI_S3_SECRET}}]
    else:
        loki["storage"] = {"type": "filesystem"}
    return {
        "deploymentMode": "Monolithic",
        "loki": loki,
        "singleBinary": single,
        # Monolithic: the scalable targets, caches, gateway and canary stay off.
        "read": {"replicas": 0},
        "write": {"replicas": 0},
        "backend": {"replicas": 0},
        "gateway": {"enabled": False},
        "chunksCache": {"enabled": False},
        "resultsCache": {"enabled": False},
        "lokiCanary": {"enabled": False},
        "test": {"enabled": False},
    }


def alloy_config() -> str:
    """Alloy pipeline: this node's pod log files -> CRI parsing -> Loki, labelled like the metrics."""
    relabel = [
        ("__meta_kubernetes_namespace", "namespace"),
        ("__meta_kubernetes_pod_name", "pod"),
        ("__meta_kubernetes_pod_container_name", "container"),
        ("__meta_kubernetes_pod_label_app", "app"),
        ("__meta_kubernetes_pod_label_version", "version"),
    ]
    rules = "\n".join(
        f'  rule {{\n    source_labels = ["{src}"]\n    target_label  = "{dst}"\n  }}' for src, dst in relabel
    )
    return f"""discovery.kubernetes "pods" {{
  role = "pod"
  selectors {{
    role  = "pod"
    field = "spec.nodeName=" + sys.env("NODE_NAME")
  }}
}}

discovery.relabel "pods" {{
  targets = discovery.kubernetes.pods.targets
{rules}
  rule {{
    source_labels = ["__meta_kubernetes_pod_uid", "__meta_kubernetes_pod_container_name"]
    separator     = "/"
    target_label  = "__path__"
    replacement   = "/var/log/pods/*$1/*.log"
  }}
}}

local.file_match "pods" {{
  path_targets = discovery.relabel.pods.output
}}

loki.source.file "pods" {{
  targets    = local.file_match.pods.targets
  forward_to = [loki.process.pods.receiver]
}}

loki.process "pods" {{
  stage.cri {{}}
  forward_to = [loki.write.default.receiver]
}}

loki.write "default" {{
  endpoint {{
    url = "{ep.LOKI_URL}/loki/api/v1/push"
  }}
}}
"""


def alloy_values() -> dict[str, Any]:
    return {
        # Every node, GPU nodes included (they carry the nvidia.com/gpu taint).
        "controller": {"type": "daemonset", "tolerations": [{"operator": "Exists"}]},
        "alloy": {
            "configMap": {"content": alloy_config()},
            "mounts": {"varlog": True},
            "extraEnv": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        },
    }


def envoy_pod_monitor_spec() -> dict[str, Any]:
    """Scrape the Envoy stats (istio_requests_total and friends) of every proxy: the sidecars and
    the ingress gateway. Both injection templates (sidecar and gateway) set the canonical-name
    label; only the sidecar one sets security.istio.io/tlsMode, so that label would miss the gateway."""
    return {
        "namespaceSelector": {"any": True},
        "selector": {"matchExpressions": [{"key": "service.istio.io/canonical-name", "operator": "Exists"}]},
        "jobLabel": "envoy-stats",
        # Port 15090 as the injector and the gateway chart name it.
        "podMetricsEndpoints": [{"port": "http-envoy-prom", "path": "/stats/prometheus", "interval": "15s"}],
    }


def istiod_service_monitor_spec() -> dict[str, Any]:
    """Scrape istiod's own metrics (push errors, proxy convergence) on its Service's monitoring port."""
    return {
        "namespaceSelector": {"matchNames": [ep.ISTIO_NAMESPACE]},
        # The istiod chart's Service labels (app: istiod, istio: pilot) and port name.
        "selector": {"matchLabels": {"app": "istiod", "istio": "pilot"}},
        "jobLabel": "istio",
        "endpoints": [{"port": "http-monitoring", "interval": "15s"}],
    }


def dashboard_files() -> list[Path]:
    return sorted(DASHBOARDS_DIR.glob("*.json"))


def runs_llm_backend(services: list[Service]) -> bool:
    return any(v.llm_backend for s in services for v in s.versions)


def provisioned_dashboards(services: list[Service], graphs: Sequence[Graph] = (), training: bool = False) -> list[Path]:
    """The dashboards a stack gets: the LLM one only where some version runs an LLM backend, the
    graphs one only where some graph runs on Ray, the training one only where teams train."""
    skip = set() if training else {TRAINING_DASHBOARD}
    if not runs_llm_backend(services):
        skip.add(LLM_DASHBOARD)
    if not any(g.placement == "ray" for g in graphs):
        skip.add(GRAPHS_DASHBOARD)
    return [p for p in dashboard_files() if p.stem not in skip]


# --------------------------------------------------------------------------- component


class Observability(pulumi.ComponentResource):
    """Metrics, logs, dashboards and alerts."""

    namespace: pulumi.Output[str]
    """Namespace of Prometheus, Grafana and Loki (NetworkPolicies let it scrape)."""
    urls: pulumi.Output[dict[str, str]]
    """In-cluster UI URLs (Grafana, Prometheus, and the mesh's Kiali and Jaeger)."""
    ui_urls: pulumi.Output[dict[str, str]]
    """Browser URLs of the UIs served on hosts of their own (Grafana, and the mesh's Kiali)."""
    grafana_admin_password: Optional[pulumi.Output[str]]
    """Secret. Grafana's admin password (user `admin`); unset when observability is not installed."""

    def __init__(self, name: str, args: ObservabilityArgs, opts: Optional[pulumi.ResourceOptions] = None,
                 *, metrics_adapter_later: bool = False):
        """`metrics_adapter_later`: prometheus-adapter waits for `install_metrics_adapter(after)`, which
        the platform calls once every namespace of the stack exists."""
        a = validated(ObservabilityInputs, args, "Observability")
        self._adapter_later = metrics_adapter_later
        self._metrics_adapter: Optional[Callable[[Sequence[pulumi.Resource]], pulumi.Resource]] = None
        init_component(self, "Observability", name, opts)
        self.namespace = ep.MONITORING_NAMESPACE
        # The kube-prometheus-stack release, which installs the ServiceMonitor/PodMonitor/PrometheusRule
        # CRDs (None when observability is not installed).
        self.crds: Optional[pulumi.Resource] = None
        self.urls = dict(a.mesh_urls)
        self.ui_urls = dict(a.ui_urls)
        self.grafana_admin_password: Optional[pulumi.Output] = None
        if a.observability.enabled:
            self._install(name, a)
            self.urls = {"grafana": ep.GRAFANA_URL, "prometheus": ep.PROMETHEUS_URL, **a.mesh_urls}
        self.register_outputs({"namespace": self.namespace, "urls": self.urls, "uiUrls": self.ui_urls,
                               "grafanaAdminPassword": self.grafana_admin_password})

    def install_metrics_adapter(self, after: Sequence[pulumi.Resource]) -> Optional[pulumi.Resource]:
        """prometheus-adapter, after `after`: every other namespace of the stack. Its APIService
        (custom.metrics.k8s.io) blocks a namespace's deletion whenever it does not answer
        (NamespaceDeletionDiscoveryFailure), so on destroy it must go before every namespace."""
        if self._metrics_adapter is None:
            return None
        adapter, self._metrics_adapter = self._metrics_adapter, None
        return adapter(after)

    def _install(self, name: str, a: ObservabilityInputs) -> None:
        def opts_(*deps: pulumi.Resource) -> pulumi.ResourceOptions:
            return resource_opts(self, depends_on=deps)

        def meta(object_name: str, component: str, **labels: str) -> dict[str, Any]:
            return {
                "name": object_name,
                "namespace": ep.MONITORING_NAMESPACE,
                "labels": standard_labels(component, **labels),
            }

        namespace = common.namespace(f"{name}-namespace", ep.MONITORING_NAMESPACE, opts_(), app="monitoring")

        password = random.RandomPassword(f"{name}-grafana-admin-password", length=24, special=False, opts=opts_())
        admin_secret = k8s.core.v1.Secret(
            f"{name}-grafana-admin",
            metadata=meta(GRAFANA_ADMIN_SECRET, "grafana"),
            type="Opaque",
            string_data={"admin-user": "admin", "admin-password": pulumi.Output.secret(password.result)},
            opts=opts_(namespace),
        )

        grafana_secrets: list[pulumi.Resource] = [admin_secret]
        if a.ui.grafana is not None and a.ui.grafana.auth == "oidc":
            grafana_secrets.append(k8s.core.v1.Secret(
                f"{name}-grafana-oidc",
                metadata=meta(GRAFANA_OIDC_SECRET, "grafana"),
                type="Opaque",
                string_data={GRAFANA_OIDC_SECRET_KEY: pulumi.Output.secret(
                    a.grafana_oidc_client_secret.get_secret_value())},
                opts=opts_(namespace),
            ))

        def release(role: str, chart: versions.Chart, release_name: str, values: Any, *deps) -> k8s.helm.v3.Release:
            return common.helm_release(
                f"{name}-{role}", release_name, chart, ep.MONITORING_NAMESPACE, values, opts_(namespace, *deps),
                timeout_seconds=chart_timeout(chart.name, values, a.cold_start),
            )

        alertmanager_secret = k8s.core.v1.Secret(
            f"{name}-alertmanager-config",
            metadata=meta(ALERTMANAGER_CONFIG_SECRET, "alertmanager"),
            type="Opaque",
            string_data={ALERTMANAGER_CONFIG_KEY: pulumi.Output.secret(alertmanager_config_text(a))},
            opts=opts_(namespace),
        )
        stack = release(
            "kube-prometheus-stack",
            versions.KUBE_PROMETHEUS_STACK,
            ep.KUBE_PROMETHEUS_RELEASE,
            kube_prometheus_values(a),
            *grafana_secrets,
            alertmanager_secret,
        )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-grafana-networkpolicy",
            metadata=meta("grafana", "grafana"),
            spec=grafana_network_policy_spec(a),
            opts=opts_(namespace),
        )
        for backend, spec in backend_network_policy_specs(a).items():
            k8s.networking.v1.NetworkPolicy(
                f"{name}-{backend}-networkpolicy",
                metadata=meta(backend, backend),
                spec=spec,
                opts=opts_(namespace),
            )
        self._metrics_adapter = lambda after: release(
            "prometheus-adapter", versions.PROMETHEUS_ADAPTER, ep.ADAPTER_RELEASE, adapter_values(a.system_node_selector),
            stack, *after)
        if not self._adapter_later:
            self.install_metrics_adapter([])

        loki_deps: list[pulumi.Resource] = []
        if a.observability.loki_storage == "s3":
            s3 = a.weights_s3
            access_key_id = pulumi.Output.secret(a.s3_access_key_id.get_secret_value())
            secret_access_key = pulumi.Output.secret(a.s3_secret_access_key.get_secret_value())
            loki_deps.append(
                S3Bucket(
                    f"{name}-loki-bucket",
                    bucket=loki_bucket_name(s3.bucket),
                    endpoint=s3.endpoint,
                    region=s3.region,
                    access_key_id=access_key_id,
                    secret_access_key=secret_access_key,
                    # Loki deletes chunks itself (retention); old versions would only pile up.
                    versioning=False,
                    adopt=s3.adopt,
                    opts=resource_opts(self, protect=a.production, retain_on_delete=a.production),
                )
            )
            loki_deps.append(
                k8s.core.v1.Secret(
                    f"{name}-loki-s3",
                    metadata=meta(LOKI_S3_SECRET, "loki"),
                    type="Opaque",
                    string_data={"LOKI_S3_ACCESS_KEY_ID": access_key_id, "LOKI_S3_SECRET_ACCESS_KEY": secret_access_key},
                    opts=opts_(namespace),
                )
            )
        release("loki", versions.LOKI, ep.LOKI_RELEASE, loki_values(a), *loki_deps)
        release("alloy", versions.ALLOY, ep.ALLOY_RELEASE, alloy_values())

        for path in provisioned_dashboards(a.services, a.graphs, bool(a.training_namespaces)):
            k8s.core.v1.ConfigMap(
                f"{name}-dashboard-{path.stem}",
                metadata=meta(f"dashboard-{path.stem}", "grafana", **{DASHBOARD_LABEL: DASHBOARD_LABEL_VALUE}),
                # Compact JSON keeps large dashboards well under the ConfigMap size limit.
                data={path.name: json.dumps(json.loads(path.read_text()), separators=(",", ":"))},
                opts=opts_(namespace),
            )

        def monitoring_cr(role: str, kind: str, object_name: str, spec: dict[str, Any]) -> None:
            k8s.apiextensions.CustomResource(
                f"{name}-{role}",
                api_version="monitoring.coreos.com/v1",
                kind=kind,
                metadata=meta(object_name, "inference-platform"),
                spec=spec,
                opts=opts_(stack),
            )

        monitoring_cr("rules", "PrometheusRule", "inference-platform", {"groups": alerts.rule_groups(a)})
        if a.mesh_installed:
            monitoring_cr("envoy-stats", "PodMonitor", "envoy-stats", envoy_pod_monitor_spec())
            monitoring_cr("istiod", "ServiceMonitor", "istiod", istiod_service_monitor_spec())
        if a.autoscaler_installed:
            monitoring_cr("cluster-autoscaler", "PodMonitor", autoscaler.NAME, autoscaler.pod_monitor_spec())

        self.crds = stack
        self.grafana_admin_password = pulumi.Output.secret(password.result)

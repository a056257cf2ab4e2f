"""What Observability takes: its settings and the names it consumes."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import SecretStr

from inference_platform.settings.base import Labels, Model
from inference_platform.settings.checks import alert_routing_problems, grafana_secret_problems
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.graphs import Graph
from inference_platform.settings.observability import ObservabilitySettings
from inference_platform.settings.serving import Service
from inference_platform.settings.ui import UiSettings
from inference_platform.settings.weights import S3Cache, loki_bucket_problems
from inference_platform.timing.estimates import GroupEstimate


class ObservabilityInputs(Model):
    """kube-prometheus-stack, prometheus-adapter, Loki, Alloy, Grafana with the platform's dashboards, and the alert rules."""

    observability: ObservabilitySettings = ObservabilitySettings()
    """Observability settings (the stack file's `observability`)."""
    ui: UiSettings = UiSettings()
    """Grafana's host and login."""
    production: bool = False
    """Protect the Prometheus, Loki and Grafana volumes."""
    services: list[Service] = []
    """The inference services the alert rules and dashboards watch."""
    graphs: list[Graph] = []
    """The inference graphs: those with `placement: ray` get the graph alerts and dashboard (an ensemble is a Triton service)."""
    gpu_groups: list[NodeGroup] = []
    """The GPU node groups the GPU alerts watch."""
    tls: bool = False
    """The ingress gateway serves HTTPS (the URLs the endpoint probes and Grafana use)."""
    mesh_installed: bool = False
    """The platform's mesh runs in the cluster: scrape istiod and the Envoy proxies."""
    mesh_urls: dict[str, str] = {}
    """In-cluster URLs of the mesh UIs (`jaeger`, `kiali`): Jaeger becomes a Grafana datasource."""
    ui_urls: dict[str, str] = {}
    """Browser URLs of the UIs served through the gateway."""
    weights_s3: Optional[S3Cache] = None
    """The S3 weight cache, whose endpoint holds Loki's bucket with `observability.lokiStorage: s3`."""
    s3_access_key_id: Optional[SecretStr] = None
    """Secret. Access key of that S3 endpoint."""
    s3_secret_access_key: Optional[SecretStr] = None
    """Secret. Secret key of that S3 endpoint."""
    grafana_oidc_client_secret: Optional[SecretStr] = None
    """Secret. Grafana's OIDC client secret, for `ui.grafana.auth: oidc`."""
    alert_receiver_secrets: dict[str, SecretStr] = {}
    """Secret. Per alert receiver, its credential (webhook URL, SMTP password, routing key)."""
    cold_start: list[GroupEstimate] = []
    """Per GPU group, the cold-start estimate (the Helm waits of DaemonSets on every GPU node allow for a joining node)."""
    autoscaler_installed: bool = False
    """The platform's cluster autoscaler runs (Heat clusters with more than one node group): scrape its metrics."""
    training_namespaces: list[str] = []
    """The training teams' namespaces: their TrainJobs get the training alerts and dashboard (none: neither)."""
    training_cluster_queues: list[str] = []
    """The training teams' Kueue ClusterQueues the training alerts watch."""
    system_node_selector: Labels = {}
    """Node labels the pods of Prometheus, Alertmanager, the Prometheus operator, kube-state-metrics, Grafana, prometheus-adapter and Loki (not the per-node exporters and Alloy, which run on every node) select, so that they stay off GPU nodes: the platform's system group (on Magnum the cluster's first, CPU group). Empty: any node that admits them."""

    def problems(self) -> list[tuple[KeyPath, str]]:
        """What the stack file's cross checks refuse of the configured parts, for the component used alone."""
        needed: list[tuple[str, Any, str]] = []
        if self.observability.loki_storage == "s3":
            loki = "observability.loki_storage 's3' needs"
            needed += [("weights_s3", self.weights_s3, f"{loki} the S3 cache holding Loki's bucket"),
                       ("s3_access_key_id", self.s3_access_key_id, f"{loki} the S3 cache's access key"),
                       ("s3_secret_access_key", self.s3_secret_access_key, f"{loki} the S3 cache's secret key")]
        problems: list[tuple[KeyPath, str]] = [((key,), why) for key, value, why in needed if value is None]
        if self.observability.loki_storage == "s3" and self.weights_s3 is not None:
            problems += [(("weights_s3", "bucket"), why) for why in loki_bucket_problems(self.weights_s3)]
        problems += grafana_secret_problems(self.ui, self.grafana_oidc_client_secret is not None,
                                            "grafana_oidc_client_secret", "Grafana's OIDC client secret")
        problems += alert_routing_problems(self.observability.alerting, self.alert_receiver_secrets)
        problems += [(("alert_receiver_secrets", r.name), f"receiver {r.name!r} needs its {r.kind} credential")
                     for r in self.observability.alerting.receivers if r.name not in self.alert_receiver_secrets]
        return problems

"""In-cluster names of the mesh and observability services, and the browser URLs of the UIs.

Helm release names are fixed so every service name is known before anything is
installed: Kiali (in the mesh) points at Prometheus and Grafana (observability),
and Grafana points back at Jaeger (mesh), without either part waiting on the other.
"""

ISTIO_NAMESPACE = "istio-system"
MONITORING_NAMESPACE = "monitoring"
GPU_OPERATOR_NAMESPACE = "gpu-operator"
COLDSTART_NAMESPACE = "gpu-coldstart"
CSI_S3_NAMESPACE = "csi-s3"
# The KubeRay operator of the graphs placed on Ray, inside the mesh.
RAY_NAMESPACE = "ray-system"
# The Argo Workflows controller of the model pipelines.
ARGO_NAMESPACE = "argo"
# Kueue's controller (the training queues), the namespace its chart's README installs into.
KUEUE_NAMESPACE = "kueue-system"
# Every namespace the platform creates or installs into; inference services may not use one.
PLATFORM_NAMESPACES = frozenset({
    ISTIO_NAMESPACE, MONITORING_NAMESPACE, GPU_OPERATOR_NAMESPACE, COLDSTART_NAMESPACE, CSI_S3_NAMESPACE, RAY_NAMESPACE,
    ARGO_NAMESPACE, KUEUE_NAMESPACE, "kube-system",
})

# Release names; the charts derive their Service names from them.
ISTIO_BASE_RELEASE = "istio-base"
ISTIOD_RELEASE = "istiod"
GATEWAY_RELEASE = "istio-ingressgateway"
# The gateway chart labels its pods app=<release>, istio=<release without "istio-"> (gateway 1.30.3
# templates/deployment.yaml).
INGRESS_POD_LABELS = {"istio": GATEWAY_RELEASE.removeprefix("istio-")}
JAEGER_RELEASE = "jaeger"
KIALI_RELEASE = "kiali"
KUBE_PROMETHEUS_RELEASE = "kube-prometheus-stack"
ADAPTER_RELEASE = "prometheus-adapter"
LOKI_RELEASE = "loki"
ALLOY_RELEASE = "alloy"

# The customer Gateway (istio-system, next to the ingress gateway and its TLS Secret).
GATEWAY_NAME = "inference-gateway"

def in_cluster_host(service: str, namespace: str) -> str:
    """A Service's name as pods in the cluster resolve it."""
    return f"{service}.{namespace}.svc.cluster.local"


# The UIs' Services, as the pinned charts name them (routed to by the UI VirtualServices):
# - Grafana: kube-prometheus-stack 88.5.3 vendors grafana 12.11.1, whose grafana.fullname is
#   "<release>-grafana" (charts/grafana/templates/_helpers.tpl) with service.port 80 -> 3000
#   (charts/grafana/values.yaml); kube-prometheus-stack names the port http-web (its values.yaml).
# - Kiali: kiali-server 2.29.0 names the Service deployment.instance_name ("kiali") and serves
#   server.port 20001 on a port named http (templates/service.yaml, values.yaml).
GRAFANA_SERVICE_HOST = in_cluster_host(f"{KUBE_PROMETHEUS_RELEASE}-grafana", MONITORING_NAMESPACE)
GRAFANA_SERVICE_PORT = 80
KIALI_SERVICE_HOST = in_cluster_host(KIALI_RELEASE, ISTIO_NAMESPACE)
KIALI_SERVICE_PORT = 20001
# The UIs' pods and the ports their NetworkPolicies admit: grafana 12.11.1 grafana.selectorLabels
# (name, release) and container port 3000 (values.yaml service.targetPort: the UI, and /metrics the
# chart's ServiceMonitor scrapes); kiali-server 2.29.0 kiali-server.selectorLabels (name,
# fullname = instance_name) and server.observability.metrics.port 9090 (values.yaml).
GRAFANA_POD_LABELS = {"app.kubernetes.io/name": "grafana", "app.kubernetes.io/instance": KUBE_PROMETHEUS_RELEASE}
GRAFANA_CONTAINER_PORT = 3000
KIALI_POD_LABELS = {"app.kubernetes.io/name": "kiali", "app.kubernetes.io/instance": KIALI_RELEASE}
KIALI_METRICS_PORT = 9090

# Jaeger v2 all-in-one: one Service named after the release (OTLP 4317, query 16686/16685).
JAEGER_HOST = in_cluster_host(JAEGER_RELEASE, ISTIO_NAMESPACE)
JAEGER_OTLP_GRPC_PORT = 4317
JAEGER_QUERY_URL = f"http://{JAEGER_HOST}:16686"
JAEGER_QUERY_GRPC_URL = f"http://{JAEGER_HOST}:16685"
KIALI_URL = f"http://{KIALI_SERVICE_HOST}:{KIALI_SERVICE_PORT}"
PROMETHEUS_HOST = in_cluster_host(f"{KUBE_PROMETHEUS_RELEASE}-prometheus", MONITORING_NAMESPACE)
PROMETHEUS_PORT = 9090
PROMETHEUS_URL = f"http://{PROMETHEUS_HOST}:{PROMETHEUS_PORT}"
GRAFANA_URL = f"http://{GRAFANA_SERVICE_HOST}"
# Monolithic Loki without its nginx gateway: the release's own Service on 3100.
LOKI_URL = f"http://{in_cluster_host(LOKI_RELEASE, MONITORING_NAMESPACE)}:3100"


def external_url(host: str, tls: bool) -> str:
    """The URL a browser opens for a UI served at the root of `host` by the ingress gateway."""
    return f"{'https' if tls else 'http'}://{host}/"

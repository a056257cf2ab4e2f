"""The mesh: Istio (base, istiod, ingress gateway), Jaeger and Kiali.

Order: the base chart installs Istio's CRDs, so istiod and every Istio custom
resource depend on it. Mesh-wide STRICT mTLS is a PeerAuthentication in the root
namespace; traces go to Jaeger through an OpenTelemetry extension provider that a
mesh-wide Telemetry resource selects with the configured sampling percentage.

The customer Gateway lists every service's hosts (never `*`), so a VirtualService
can only bind hosts the stack declares; the UI hosts (`ui.grafana.host`, `ui.kiali.host`)
have servers of their own on it, with the same TLS, and a VirtualService each to the
Grafana or Kiali Service. Neither UI runs with a sidecar (istio-system and monitoring are
not injected), so the gateway talks plain HTTP to them (auto mTLS) and the mesh-wide
STRICT policy, which only binds workloads with a sidecar, does not apply. With `mesh.enabled: false` nothing is
installed and the component names the Gateway `istio-system/inference-gateway`, which
the cluster's own Istio must provide. Services and graphs take the mesh as one handle,
`Mesh.reference()` (a MeshRef, mesh/ref.py).
"""

import copy
import functools
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s
import yaml

from inference_platform.args import MeshArgs
from inference_platform.core import common, versions
from inference_platform.core import endpoints as ep
from inference_platform.core.common import init_component, resource_opts, standard_labels, with_node_selector
from inference_platform.mesh.inputs import MeshInputs
from inference_platform.mesh.ref import GATEWAY, INGRESS_PRINCIPAL, MeshRef
from inference_platform.settings.component_args import validated
from inference_platform.settings.mesh import GatewayTls
from inference_platform.settings.serving import Service
from inference_platform.timing.readiness import chart_timeout

TRACING_PROVIDER = "jaeger-otel"
INGRESS_SELECTOR = ep.INGRESS_POD_LABELS
JAEGER_DATA_CLAIM = "jaeger-data"
JAEGER_DATA_PATH = "/badger"
# In-cluster URLs of the mesh's UIs, exported when the mesh is installed.
MESH_URLS = {"kiali": ep.KIALI_URL, "jaeger": ep.JAEGER_QUERY_URL}


def service_hosts(services: list[Service]) -> list[str]:
    """Every host of every service, in stack order, without duplicates."""
    return list(dict.fromkeys(h for svc in services for h in svc.hosts))


# --------------------------------------------------------------------------- values and specs


# istiod reads InferencePools (the HTTPRoute backends of LLM services) only with this set
# (istio 1.30.3 pilot/pkg/features/experimental.go EnableGatewayAPIInferenceExtension).
INFERENCE_EXTENSION_ENV = {"ENABLE_GATEWAY_API_INFERENCE_EXTENSION": "true"}


def istiod_values(a: MeshInputs) -> dict[str, Any]:
    values: dict[str, Any] = {"env": dict(INFERENCE_EXTENSION_ENV)} if a.gateway_api else {}
    # istiod 1.30.3 templates/deployment.yaml: .Values.nodeSelector (the user's top-level key)
    # and .Values.env, one variable each.
    return with_node_selector({
        **values,
        # Pinned images: the proxies and the gateway take hub and tag from istiod.
        "global": {"hub": versions.ISTIO_HUB, "tag": versions.ISTIOD.version},
        "meshConfig": {
            "enableTracing": True,
            "extensionProviders": [
                {
                    "name": TRACING_PROVIDER,
                    "opentelemetry": {"service": ep.JAEGER_HOST, "port": ep.JAEGER_OTLP_GRPC_PORT},
                }
            ],
        },
    }, a.system_node_selector, "nodeSelector")


# Seconds between the end of the gateway's drain and the kubelet's SIGKILL.
GATEWAY_SHUTDOWN_MARGIN = 10


def gateway_values(a: MeshInputs) -> dict[str, Any]:
    """The ingress gateway: two replicas at least, a PodDisruptionBudget that keeps one through
    a node drain (the chart's defaults are one replica and no budget), and a drain as long as
    the longest request it carries (Istio's terminationDrainDuration defaults to 5 s, the
    chart's grace period to 30 s: both would cut long generations at every scale-down)."""
    drain = a.request_timeout_seconds
    # gateway 1.30.3 templates/deployment.yaml: .Values.nodeSelector.
    return with_node_selector({
        "service": {"type": "LoadBalancer", "annotations": dict(a.mesh.gateway_annotations)},
        "autoscaling": {"minReplicas": 2},
        "podDisruptionBudget": {"minAvailable": 1},
        # istio/api mesh/v1alpha1/proxy.proto termination_drain_duration: on SIGTERM the agent
        # drains Envoy, then waits this long before it stops it.
        "podAnnotations": {"proxy.istio.io/config": f"terminationDrainDuration: {drain}s"},
        "terminationGracePeriodSeconds": drain + GATEWAY_SHUTDOWN_MARGIN,
    }, a.system_node_selector, "nodeSelector")


def ui_hosts(a: MeshInputs) -> list[str]:
    """The UI hosts the stack serves (Grafana only where observability installs it)."""
    return list(a.ui.hosts.values())


def ui_urls(a: MeshInputs) -> dict[str, str]:
    """UI name -> the URL a browser opens."""
    return {name: ep.external_url(host, a.mesh.tls.enabled) for name, host in a.ui.hosts.items()}


def _servers(hosts: list[str], suffix: str, tls: GatewayTls) -> list[dict[str, Any]]:
    """HTTPS with an HTTP redirect when TLS is configured, HTTP otherwise; port names end in `suffix`."""
    http: dict[str, Any] = {"port": {"number": 80, "name": f"http{suffix}", "protocol": "HTTP"}, "hosts": hosts}
    if not tls.enabled:
        return [http]
    http["tls"] = {"httpsRedirect": True}
    https = {
        "port": {"number": 443, "name": f"https{suffix}", "protocol": "HTTPS"},
        "hosts": hosts,
        "tls": {"mode": "SIMPLE", "credentialName": tls.secret_name},
    }
    return [https, http]


def gateway_spec(a: MeshInputs) -> dict[str, Any]:
    """The customer Gateway: the services' hosts, and the UI hosts on servers of their own."""
    servers: list[dict[str, Any]] = []
    for hosts, suffix in ((a.hosts, ""), (ui_hosts(a), "-ui")):
        if hosts:
            servers += _servers(hosts, suffix, a.mesh.tls)
    return {"selector": dict(INGRESS_SELECTOR), "servers": servers}


# UI name -> (Service host, port) the gateway routes the UI's host to.
UI_BACKENDS = {
    "grafana": (ep.GRAFANA_SERVICE_HOST, ep.GRAFANA_SERVICE_PORT),
    "kiali": (ep.KIALI_SERVICE_HOST, ep.KIALI_SERVICE_PORT),
}


def ui_virtual_service_spec(name: str, host: str) -> dict[str, Any]:
    """Everything on the UI's host to its Service; the UI's own login guards it."""
    service, port = UI_BACKENDS[name]
    return {
        "hosts": [host],
        "gateways": [GATEWAY],
        "http": [{"name": name, "route": [{"destination": {"host": service, "port": {"number": port}}}]}],
    }


def telemetry_spec(a: MeshInputs) -> dict[str, Any]:
    return {
        "tracing": [
            {
                "providers": [{"name": TRACING_PROVIDER}],
                "randomSamplingPercentage": a.mesh.tracing_sampling_percent,
            }
        ]
    }


def jaeger_config() -> dict[str, Any]:
    """Jaeger v2 configuration with Badger on a volume (the chart's default is in-memory)."""
    store = {
        "badger": {
            "directories": {"keys": f"{JAEGER_DATA_PATH}/keys", "values": f"{JAEGER_DATA_PATH}/values"},
            "ephemeral": False,
            "ttl": {"spans": "168h"},
        }
    }
    return {
        "service": {
            "extensions": ["jaeger_storage", "jaeger_query", "healthcheckv2"],
            "pipelines": {
                "traces": {"receivers": ["otlp"], "processors": ["batch"], "exporters": ["jaeger_storage_exporter"]}
            },
        },
        "extensions": {
            "healthcheckv2": {"use_v2": True, "http": {"endpoint": "0.0.0.0:13133"}},
            "jaeger_query": {"storage": {"traces": "badger_store"}},
            "jaeger_storage": {"backends": {"badger_store": store}},
        },
        "receivers": {
            "otlp": {
                "protocols": {"grpc": {"endpoint": "0.0.0.0:4317"}, "http": {"endpoint": "0.0.0.0:4318"}}
            }
        },
        "processors": {"batch": {}},
        "exporters": {"jaeger_storage_exporter": {"trace_storage": "badger_store"}},
    }


def jaeger_values(a: MeshInputs) -> dict[str, Any]:
    values: dict[str, Any] = {"jaeger": {"image": {"tag": versions.JAEGER_IMAGE_TAG}}}
    if a.mesh.jaeger_storage == "persistent":
        values["userconfig"] = jaeger_config()
        values["jaeger"]["extraVolumes"] = [
            {"name": "data", "persistentVolumeClaim": {"claimName": JAEGER_DATA_CLAIM}}
        ]
        values["jaeger"]["extraVolumeMounts"] = [{"name": "data", "mountPath": JAEGER_DATA_PATH}]
    # jaeger 4.11.1 templates/jaeger/jaeger-deploy.yaml: .Values.jaeger.nodeSelector.
    return with_node_selector(values, a.system_node_selector, "jaeger.nodeSelector")


def kiali_auth(a: MeshInputs) -> dict[str, Any]:
    auth: dict[str, Any] = {"strategy": a.mesh.kiali_auth}
    oidc = a.mesh.kiali_openid
    if oidc is not None:
        # The client secret stays out of values: Kiali reads it from the Secret `kiali` (oidc-secret).
        auth["openid"] = {"issuer_uri": oidc.issuer_uri, "client_id": oidc.client_id, "username_claim": oidc.username_claim}
    return auth


def kiali_server(a: MeshInputs) -> dict[str, Any]:
    """Kiali's public address when it has a host: at the host's root, so redirects and the
    openid callback (`https://<host>/`) point where the browser is."""
    if a.ui.kiali is None:
        return {}
    return {
        "web_fqdn": a.ui.kiali.host,
        "web_schema": "https" if a.mesh.tls.enabled else "http",
        "web_root": "/",
    }


def kiali_values(a: MeshInputs) -> dict[str, Any]:
    urls = ui_urls(a)
    tracing: dict[str, Any] = {
        "enabled": True,
        "provider": "jaeger",
        "internal_url": ep.JAEGER_QUERY_GRPC_URL,
        "use_grpc": True,
    }
    # Jaeger's UI is not served outside the cluster: with UI hosts Kiali links to no in-cluster
    # address, and traces are read in Kiali itself and in Grafana's Jaeger datasource.
    if not urls:
        tracing["external_url"] = ep.JAEGER_QUERY_URL
    grafana = {"enabled": True, "internal_url": ep.GRAFANA_URL, "external_url": urls.get("grafana", ep.GRAFANA_URL)}
    values: dict[str, Any] = {
        "auth": kiali_auth(a),
        "deployment": {"image_version": versions.KIALI_IMAGE_TAG},
        "external_services": {"prometheus": {"url": ep.PROMETHEUS_URL}, "tracing": tracing, "grafana": grafana},
    }
    server = kiali_server(a)
    if server:
        values["server"] = server
    # kiali-server 2.29.0 templates/deployment.yaml: .Values.deployment.node_selector.
    return with_node_selector(values, a.system_node_selector, "deployment.node_selector")


def kiali_network_policy_spec(a: MeshInputs) -> dict[str, Any]:
    """Kiali's UI port admits the ingress gateway when the gateway serves Kiali's host
    (`ui.kiali`), and nothing else: no Prometheus scrapes Kiali, and a port-forward does not
    pass through NetworkPolicy. Egress stays open (the API server, Prometheus, istiod, Jaeger)."""
    rules = [(ep.KIALI_SERVICE_PORT, [common.from_pods(ep.ISTIO_NAMESPACE, INGRESS_SELECTOR)])] if a.ui.kiali else []
    return common.ingress_only_spec(ep.KIALI_POD_LABELS, rules)


# jaeger 4.11.1 templates/_helpers.tpl jaeger.selectorLabels (the chart's name, no nameOverride).
JAEGER_POD_LABELS = {"app.kubernetes.io/name": "jaeger", "app.kubernetes.io/instance": ep.JAEGER_RELEASE}
JAEGER_QUERY_PORTS = (16686, 16685)  # HTTP (Grafana's datasource) and gRPC (Kiali) query APIs
JAEGER_METRICS_PORT = 8888


def jaeger_network_policy_spec() -> dict[str, Any]:
    """Jaeger takes spans from every pod on its OTLP port (each proxy of the mesh sends there,
    meshConfig's opentelemetry provider), and its traces are read only by Grafana (the monitoring
    namespace) and Kiali; its other receivers (Jaeger and Zipkin ports) admit nothing."""
    readers = [*common.from_namespace(ep.MONITORING_NAMESPACE), common.from_pods(ep.ISTIO_NAMESPACE, ep.KIALI_POD_LABELS)]
    return common.ingress_only_spec(JAEGER_POD_LABELS, [
        (ep.JAEGER_OTLP_GRPC_PORT, [{"namespaceSelector": {}}]),
        *((port, readers) for port in JAEGER_QUERY_PORTS),
        (JAEGER_METRICS_PORT, common.from_namespace(ep.MONITORING_NAMESPACE)),
    ])


# The Gateway API standard channel v1.5.1 (kubernetes-sigs/gateway-api config/crd/standard; the
# version Istio 1.30.3 builds against) and the InferencePool of gateway-api-inference-extension
# v1.4.0 (Istio's pin), shipped verbatim (crds/; ../shared/reference/crds).
CRDS_DIR = common.shipped_dir("crds")


# libyaml's parser with PyYAML's safe constructor and resolver, where PyYAML was built with it: the
# same documents (tests/unit/test_shipped_crds.py) from 1.1 MB of YAML in 0.06 s of CPU, not 0.43 s.
_CRD_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def _parsed_crds() -> tuple[dict[str, Any], ...]:
    return tuple(yaml.load(path.read_text(), Loader=_CRD_LOADER) for path in sorted(CRDS_DIR.glob("*.yaml")))  # noqa: S506 - a safe loader


def gateway_api_crd_documents() -> list[dict[str, Any]]:
    """The shipped CRDs, parsed once per process; each caller gets its own copy."""
    return copy.deepcopy(list(_parsed_crds()))


def gateway_api_crds(parent: pulumi.Resource, name: str) -> list[pulumi.Resource]:
    """The CRDs, kept in the cluster when the stack drops them: deleting a CRD deletes every
    object of its kind, other teams' Gateways and routes too."""
    return [k8s.apiextensions.v1.CustomResourceDefinition(
        f"{name}-crd-{doc['spec']['names']['plural']}-{doc['spec']['group']}",
        metadata=doc["metadata"], spec=doc["spec"], opts=resource_opts(parent, retain_on_delete=True),
    ) for doc in gateway_api_crd_documents()]


# --------------------------------------------------------------------------- component


class Mesh(pulumi.ComponentResource):
    """Istio, the customer Gateway, Jaeger and Kiali."""

    gateway: pulumi.Output[str]
    """`<namespace>/<name>` of the customer Gateway, for VirtualServices."""
    ingress_namespace: pulumi.Output[str]
    """Namespace of the ingress gateway pods."""
    ingress_principal: pulumi.Output[str]
    """SPIFFE principal of the ingress gateway, for AuthorizationPolicies."""
    urls: pulumi.Output[dict[str, str]]
    """In-cluster URLs of the mesh UIs (Kiali, Jaeger) when installed."""
    ui_urls: pulumi.Output[dict[str, str]]
    """Browser URLs of the UIs the gateway serves on hosts of their own (Grafana, Kiali)."""

    def __init__(self, name: str, args: MeshArgs, opts: Optional[pulumi.ResourceOptions] = None):
        a = validated(MeshInputs, args, "Mesh")
        init_component(self, "Mesh", name, opts)
        # Without the mesh these name the Gateway and principal the cluster's own Istio must provide.
        self.gateway = GATEWAY
        self.ingress_namespace = ep.ISTIO_NAMESPACE
        self.ingress_principal = INGRESS_PRINCIPAL
        # Whether the gateway serves HTTPS (`mesh.tls`): the scheme of the services' URLs.
        self.tls = a.mesh.tls.enabled
        # The release that installs Istio's CRDs, and the istiod release, whose webhook injects
        # sidecars (pods in an injected namespace created before it run without one); None
        # when the mesh is not installed.
        self.crds: Optional[pulumi.Resource] = None
        self.injector: Optional[pulumi.Resource] = None
        self.urls: dict[str, str] = {}
        self.ui_urls: dict[str, str] = {}
        # The Gateway API and InferencePool CRDs, where the stack has an LLM service.
        self.gateway_api_crds: list[pulumi.Resource] = []
        if a.mesh.enabled:
            self._install(name, a)
        self.register_outputs({"gateway": self.gateway, "ingressNamespace": self.ingress_namespace,
                               "ingressPrincipal": self.ingress_principal, "urls": self.urls, "uiUrls": self.ui_urls})

    def _install(self, name: str, a: MeshInputs) -> None:
        def opts_(*deps: pulumi.Resource) -> pulumi.ResourceOptions:
            return resource_opts(self, depends_on=deps)

        namespace = common.namespace(f"{name}-namespace", ep.ISTIO_NAMESPACE, opts_(), app="istio")

        def release(role: str, chart: versions.Chart, release_name: str, values: dict, *deps) -> k8s.helm.v3.Release:
            return common.helm_release(
                f"{name}-{role}", release_name, chart, ep.ISTIO_NAMESPACE, values, opts_(namespace, *deps),
                timeout_seconds=chart_timeout(chart.name, values, (), a.node_boot_seconds),
            )

        base = release("base", versions.ISTIO_BASE, ep.ISTIO_BASE_RELEASE, {})
        if a.gateway_api:
            self.gateway_api_crds = gateway_api_crds(self, name)
        # Not needed for istiod itself: it waits for the Gateway CRD and watches InferencePools
        # through informers started once their CRDs appear (istio 1.30.3 pkg/kube/kclient/client.go
        # NewDelayedInformer, pilot/pkg/bootstrap/configcontroller.go WaitForCRD), but it puts
        # the CRDs ahead of everything that comes after istiod.
        istiod = release("istiod", versions.ISTIOD, ep.ISTIOD_RELEASE, istiod_values(a), base, *self.gateway_api_crds)
        # The gateway's pods are injected by istiod, so it must be running first.
        release("gateway", versions.ISTIO_GATEWAY, ep.GATEWAY_RELEASE, gateway_values(a), istiod)

        def custom(role: str, api_version: str, kind: str, meta_name: str, spec: dict) -> None:
            k8s.apiextensions.CustomResource(
                f"{name}-{role}",
                api_version=api_version,
                kind=kind,
                metadata={"name": meta_name, "namespace": ep.ISTIO_NAMESPACE, "labels": standard_labels("istio")},
                spec=spec,
                opts=opts_(base),
            )

        custom("mtls", "security.istio.io/v1", "PeerAuthentication", "default", {"mtls": {"mode": "STRICT"}})
        custom("tracing", "telemetry.istio.io/v1", "Telemetry", "mesh-default", telemetry_spec(a))
        if a.hosts or ui_hosts(a):
            custom("gateway-customer", "networking.istio.io/v1", "Gateway", ep.GATEWAY_NAME, gateway_spec(a))
        for ui_name, host in a.ui.hosts.items():
            custom(f"ui-{ui_name}", "networking.istio.io/v1", "VirtualService", f"ui-{ui_name}",
                   ui_virtual_service_spec(ui_name, host))

        jaeger_deps = []
        if a.mesh.jaeger_storage == "persistent":
            claim_spec: dict[str, Any] = {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": a.mesh.jaeger_storage_size}},
            }
            if a.storage_class:
                claim_spec["storageClassName"] = a.storage_class
            jaeger_deps.append(
                k8s.core.v1.PersistentVolumeClaim(
                    f"{name}-jaeger-data",
                    metadata={
                        "name": JAEGER_DATA_CLAIM,
                        "namespace": ep.ISTIO_NAMESPACE,
                        "labels": standard_labels("jaeger"),
                    },
                    spec=claim_spec,
                    opts=resource_opts(
                        self, depends_on=[namespace], protect=a.production, retain_on_delete=a.production,
                    ),
                )
            )
        release("jaeger", versions.JAEGER, ep.JAEGER_RELEASE, jaeger_values(a), *jaeger_deps)
        k8s.networking.v1.NetworkPolicy(
            f"{name}-jaeger-networkpolicy",
            metadata={"name": ep.JAEGER_RELEASE, "namespace": ep.ISTIO_NAMESPACE, "labels": standard_labels("jaeger")},
            spec=jaeger_network_policy_spec(),
            opts=opts_(namespace),
        )
        release("kiali", versions.KIALI, ep.KIALI_RELEASE, kiali_values(a), istiod)
        # In place of the chart's own, which admits any pod (chart_hardening.py).
        k8s.networking.v1.NetworkPolicy(
            f"{name}-kiali-networkpolicy",
            metadata={"name": ep.KIALI_RELEASE, "namespace": ep.ISTIO_NAMESPACE, "labels": standard_labels("kiali")},
            spec=kiali_network_policy_spec(a),
            opts=opts_(namespace),
        )

        self.crds = base
        self.injector = istiod
        self.urls = dict(MESH_URLS)
        self.ui_urls = ui_urls(a)

    def reference(self, monitoring_namespace: str = ep.MONITORING_NAMESPACE) -> MeshRef:
        """What a service or graph behind this mesh needs of it, with the namespace of the
        Prometheus that scrapes it (Observability's)."""
        return MeshRef(gateway=self.gateway, ingress_namespace=self.ingress_namespace, ingress_pod_labels=INGRESS_SELECTOR,
                       ingress_principal=self.ingress_principal, monitoring_namespace=monitoring_namespace, tls=self.tls)

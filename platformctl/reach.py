"""Who may reach what inside the cluster: for each workload, the backends (Service ports) it can
open a connection to and be answered on, derived from the rendered objects; and the wiring, the
connections the platform itself configures (scrapes, datasources, routes, the picker, tracing),
each of which must be admitted.

A connection from a source pod to a Service port reaches the pods the Service selects when:
1. the NetworkPolicies admit it (platformctl/network_reach.py: the target's ingress rules and the
   source's egress rules);
2. where the target carries an Envoy, mutual TLS allows it: a PeerAuthentication in STRICT mode
   for the target port (the workload's own, else its namespace's, else the root namespace's;
   `portLevelMtls` first) refuses a source without a proxy (istio 1.30.3
   pilot/pkg/security/authn/policy_applier.go, the most specific policy wins);
3. and the target's AuthorizationPolicies admit the source's identity
   (`cluster.local/ns/<namespace>/sa/<account>`, none for a plain-text caller) on that port for
   some path and method they name (platformctl/mesh_eval.py), without a credential: an in-cluster
   caller holds no end-user token.
The proxy's own ports (15020 merged metrics, 15021 health, 15090 Envoy's metrics) are answered by
Envoy before its inbound chain and count as reached when the network admits them.

Pods come from every pod template of the plan and of its Helm releases (rendered by the caller),
and from the objects whose controllers make pods: a Prometheus or Alertmanager (the operator
labels them with their app name), a Gateway of class istio (`<gateway>-istio`, gateway_pods.py),
a RayService's head and worker groups. A pod carries an Envoy when its namespace is labelled
`istio-injection: enabled` or it is labelled `sidecar.istio.io/inject: "true"` (istiod's
webhooks), and it does not opt out; a Gateway's pods are proxies themselves.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Optional

from platformctl import mesh_eval
from platformctl.gateway_pods import GATEWAY_NAME_LABEL, ROOT_NAMESPACE, matches, pod_labels
from platformctl.network_reach import Pod, admits

REACHES = "reaches"
BY_NETWORK, BY_MTLS, BY_AUTHZ = "refused by a NetworkPolicy", "refused: plain text to STRICT mTLS", "403"
PROXY_OWN_PORTS = frozenset({15020, 15021, 15090})
INJECT = "sidecar.istio.io/inject"
POD_TEMPLATE_PATHS = {
    "Deployment": ("spec", "template"), "StatefulSet": ("spec", "template"), "DaemonSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"), "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}
# The labels and ports of the pods the prometheus-operator runs for a Prometheus or an Alertmanager
# (prometheus-operator v0.93.0 pkg/prometheus/server/operator.go:1696-1703 and statefulset.go:223-226,
# pkg/alertmanager/operator.go:796-803): the web port and the config reloader's.
OPERATED = {"Prometheus": ("prometheus", {"web": 9090, "http-web": 9090, "reloader-web": 8080}),
            "Alertmanager": ("alertmanager", {"web": 9093, "http-web": 9093, "reloader-web": 8080})}


def _operated_labels(kind: str, name: str) -> dict[str, str]:
    app = OPERATED[kind][0]
    labels = {"app.kubernetes.io/managed-by": "prometheus-operator", "app.kubernetes.io/name": app,
              "app.kubernetes.io/instance": name, app: name}
    if kind == "Prometheus":
        labels |= {"operator.prometheus.io/name": name, "operator.prometheus.io/shard": "0"}
    return labels


class Workload(NamedTuple):
    name: str  # "<Kind> <namespace>/<name>"
    namespace: str
    labels: Mapping[str, str]
    account: str
    mesh: bool
    ports: Mapping[str, int]  # named container ports
    host_network: bool = False
    release: str = ""  # the Helm release that renders it

    @property
    def principal(self) -> str:
        return f"cluster.local/ns/{self.namespace}/sa/{self.account}" if self.mesh else ""

    @property
    def pod(self) -> Pod:
        return Pod(self.namespace, self.labels)


class Backend(NamedTuple):
    service: str  # "<name>.<namespace>"
    namespace: str
    selector: Mapping[str, str]
    port: int
    target: Any  # the container port: a number or a name
    name: str = ""  # the Service port's name
    labels: Mapping[str, str] = {}  # the Service's own labels (what a ServiceMonitor selects)


class Row(NamedTuple):
    source: str
    backend: str  # "<service>.<namespace>:<port>"
    answer: str


def _ray_labels(rayservice: str, head: bool) -> dict[str, str]:
    """What KubeRay v1.7.0 adds to a RayService's pods (ray-operator/controllers/ray/common/pod.go:
    832-844 BuildPod, utils/constant.go:19-24): its RayCluster's name (generated: a stand-in here),
    the node type, and `ray.io/serve` (true on workers; on the head once the RayService controller
    finds it serving, rayservice_controller.go:2110, taken as serving)."""
    return {"ray.io/cluster": f"{rayservice}-raycluster", "ray.io/node-type": "head" if head else "worker",
            "ray.io/serve": "true"}


def _dig(doc: Mapping, path: Iterable[str]) -> Optional[Mapping]:
    for key in path:
        doc = (doc or {}).get(key)
    return doc


def _named_ports(spec: Mapping) -> dict[str, int]:
    return {p["name"]: p["containerPort"] for c in [*spec.get("containers", []), *spec.get("initContainers", [])]
            for p in c.get("ports", []) if "name" in p}


class Objects:
    """The Kubernetes objects of a plan and its releases, with what the reach model asks of them."""

    def __init__(self, docs: Iterable[Mapping[str, Any]], releases: Iterable[Mapping[str, Any]] = (),
                 rendered: Callable[[Mapping[str, Any]], list[dict]] = lambda release: []):
        """`docs`: the plan's objects; `releases`: its Helm releases' inputs (name, namespace,
        values); `rendered`: a release's objects (a `helm template` of it)."""
        self.release_of: dict[int, str] = {}
        self.docs = [d for d in docs if isinstance(d, Mapping) and "kind" in d]
        self.release_values = {}
        for release in releases:
            self.release_values[release["name"]] = release.get("values") or {}
            for d in rendered(release):
                if isinstance(d, Mapping) and "kind" in d:
                    # A chart's object without a namespace lands in the release's.
                    d = {**d, "metadata": {"namespace": release.get("namespace") or "default", **d["metadata"]}}
                    self.release_of[id(d)] = release["name"]
                    self.docs.append(d)
        self.injected = {d["metadata"]["name"] for d in self.of("Namespace")
                         if (d["metadata"].get("labels") or {}).get("istio-injection") == "enabled"}
        self.network_policies = self.of("NetworkPolicy")
        self.workloads = list(self._workloads())
        self.backends = list(self._backends())

    def of(self, kind: str, namespace: Optional[str] = None) -> list[dict]:
        return [d for d in self.docs if d["kind"] == kind
                and (namespace is None or (d["metadata"].get("namespace") or "default") == namespace)]

    def _mesh(self, namespace: str, template_meta: Mapping) -> bool:
        opt = {**(template_meta.get("annotations") or {}), **(template_meta.get("labels") or {})}.get(INJECT)
        return opt == "true" or (namespace in self.injected and opt != "false")

    def _template_workload(self, name: str, namespace: str, template: Mapping, extra_labels: Mapping = {}) -> Workload:
        meta, spec = template.get("metadata") or {}, template.get("spec") or {}
        return Workload(name, namespace, {**(meta.get("labels") or {}), **extra_labels},
                        spec.get("serviceAccountName") or "default", self._mesh(namespace, meta), _named_ports(spec),
                        bool(spec.get("hostNetwork")))

    def _workloads(self) -> Iterator[Workload]:
        for d in self.docs:
            ns, name, kind = d["metadata"].get("namespace") or "default", d["metadata"]["name"], d["kind"]
            if kind in POD_TEMPLATE_PATHS:
                yield self._template_workload(f"{kind} {ns}/{name}", ns, _dig(d, POD_TEMPLATE_PATHS[kind]) or {})._replace(
                    release=self.release_of.get(id(d), ""))
            elif kind in OPERATED and d["apiVersion"].startswith("monitoring.coreos.com/"):
                labels = {**((d["spec"].get("podMetadata") or {}).get("labels") or {}), **_operated_labels(kind, name)}
                yield Workload(f"{kind} {ns}/{name}", ns, labels, d["spec"].get("serviceAccountName") or "default",
                               False, OPERATED[kind][1], release=self.release_of.get(id(d), ""))
            elif kind == "Gateway" and d["apiVersion"].startswith("gateway.networking.k8s.io/"):
                labels = pod_labels(d)
                ports = {f"listener-{listener['port']}": listener["port"] for listener in d["spec"]["listeners"]}
                yield Workload(f"Gateway pods {ns}/{name}-istio", ns, labels, f"{name}-istio", True, ports)
            elif kind == "RayService":
                cluster = d["spec"]["rayClusterConfig"]
                groups = [("head", cluster["headGroupSpec"])] + [(g["groupName"], g) for g in cluster.get("workerGroupSpecs", [])]
                for group, spec in groups:
                    yield self._template_workload(f"RayService {ns}/{name} {group}", ns, spec["template"],
                                                  _ray_labels(name, group == "head"))

    def _backends(self) -> Iterator[Backend]:
        for s in self.of("Service"):
            ns, name = s["metadata"].get("namespace") or "default", s["metadata"]["name"]
            selector = s["spec"].get("selector")
            for p in s["spec"].get("ports", []) if selector else ():
                if p.get("protocol", "TCP") == "TCP":
                    yield Backend(f"{name}.{ns}", ns, selector, p["port"], p.get("targetPort", p["port"]), p.get("name", ""),
                                  s["metadata"].get("labels") or {})
        for pool in self.of("InferencePool"):  # the gateway sends to the pool's pods on its target ports
            ns, name, spec = pool["metadata"].get("namespace") or "default", pool["metadata"]["name"], pool["spec"]
            for port in [p["number"] for p in spec.get("targetPorts", [])]:
                yield Backend(f"InferencePool {name}.{ns}", ns, spec["selector"].get("matchLabels", spec["selector"]), port, port)
        for rs in self.of("RayService"):
            ns, name = rs["metadata"].get("namespace") or "default", rs["metadata"]["name"]
            head = next(w for w in self.workloads if w.name == f"RayService {ns}/{name} head")
            cluster = {"ray.io/cluster": head.labels["ray.io/cluster"]}
            for port_name, port in head.ports.items():
                yield Backend(f"{name}-head-svc.{ns}", ns, {**cluster, "ray.io/node-type": "head"}, port, port_name, port_name)
                if port_name == "serve" or port_name.startswith("serve-"):
                    yield Backend(f"{name}-serve-svc.{ns}", ns, {**cluster, "ray.io/serve": "true"}, port, port_name, port_name)
        for w in self.workloads:
            if w.name.startswith("Gateway pods "):  # istiod's Service for the Gateway: the listeners' ports
                service = w.name.split("/", 1)[1]
                for port in w.ports.values():
                    yield Backend(f"{service}.{w.namespace}", w.namespace, {GATEWAY_NAME_LABEL: w.labels[GATEWAY_NAME_LABEL]}, port, port)

    def pods_of(self, backend: Backend) -> list[tuple[Workload, int]]:
        """The workloads behind a backend, each with the container port the Service sends to."""
        out = []
        for w in self.workloads:
            if w.namespace == backend.namespace and matches({"matchLabels": dict(backend.selector)}, w.labels):
                port = backend.target if isinstance(backend.target, int) else w.ports.get(backend.target)
                if port is not None:
                    out.append((w, int(port)))
        return out

    def _istio_specs(self, kind: str, target: Workload) -> list[dict]:
        specs = [d["spec"] for ns in {target.namespace, ROOT_NAMESPACE} for d in self.of(kind, ns)
                 if "targetRefs" not in d["spec"] and "targetRef" not in d["spec"]
                 and matches(d["spec"].get("selector"), target.labels)]
        gateway = target.labels.get(GATEWAY_NAME_LABEL)
        specs += [d["spec"] for d in self.of(kind, target.namespace)
                  if gateway and any(t.get("kind") == "Gateway" and t.get("name") == gateway
                                     for t in d["spec"].get("targetRefs", []))]
        return specs

    def mtls_mode(self, target: Workload, port: int) -> str:
        """The PeerAuthentication mode for a target port: the workload's policy, else its
        namespace's, else the mesh's (the root namespace's without a selector); PERMISSIVE by default."""
        candidates = [(0 if d["spec"].get("selector") else 1 if ns == target.namespace else 2, d["spec"])
                      for ns in {target.namespace, ROOT_NAMESPACE} for d in self.of("PeerAuthentication", ns)
                      if (ns == target.namespace and matches(d["spec"].get("selector"), target.labels))
                      or (ns == ROOT_NAMESPACE and not d["spec"].get("selector"))]
        for _, spec in sorted(candidates, key=lambda c: c[0]):
            level = (spec.get("portLevelMtls") or {}).get(str(port)) or (spec.get("portLevelMtls") or {}).get(port)
            mode = (level or spec.get("mtls") or {}).get("mode", "UNSET")
            if mode != "UNSET":
                return mode
        return "PERMISSIVE"

    def answer(self, source: Workload, target: Workload, port: int, network_only: bool = False,
               paths: Iterable[str] = (), request_principal: Optional[str] = None) -> str:
        """The answer of one connection; `network_only`: under the NetworkPolicies alone (each
        layer must hold on its own); `paths`: the requests' paths (default: every path the
        policies name); `request_principal`: the end user's token the caller forwards, if any."""
        if not target.host_network and not admits(self.network_policies, source.pod, target.pod, port,
                                                  source_policies=self.network_policies):
            return BY_NETWORK
        if network_only or not target.mesh or port in PROXY_OWN_PORTS:
            return REACHES
        if not source.mesh and self.mtls_mode(target, port) == "STRICT":
            return BY_MTLS
        policies = self._istio_specs("AuthorizationPolicy", target)
        if any(mesh_eval.allowed(policies, source.principal, port, path, method=method, request_principal=request_principal)
               for path in (list(paths) or mesh_eval.probe_paths(policies)) for method in ("GET", "POST")):
            return REACHES
        return BY_AUTHZ

    def reach(self, source: Workload, backend: Backend, network_only: bool = False,
              paths: Iterable[str] = (), request_principal: Optional[str] = None) -> str:
        """The answer of a connection to a backend (the requests as `answer` takes them): the
        first refusal among its pods, or reaches; a backend with no pod in the model is 'no pods'."""
        answers = [self.answer(source, w, port, network_only, paths, request_principal) for w, port in self.pods_of(backend)]
        if not answers:
            return "no pods"
        return next((a for a in answers if a != REACHES), REACHES)


def strangers(objects: Objects) -> list[Workload]:
    """Any other pod of each namespace the workloads use: a user's tool with a label of its own and
    the default ServiceAccount, once without an Envoy and once with one (any pod may ask for a
    sidecar with the label `sidecar.istio.io/inject: "true"`)."""
    return [Workload(f"any other pod of {ns}{' with a sidecar' if mesh else ''}", ns, {"app": "debug"}, "default", mesh, {})
            for ns in sorted({w.namespace for w in objects.workloads}) for mesh in (False, True)]


def reach_rows(objects: Objects, sources: Optional[Iterable[Workload]] = None, network_only: bool = False) -> list[Row]:
    """For each source (the plan's workloads by default), the backends it reaches."""
    return sorted(Row(s.name, f"{b.service}:{b.port}", REACHES) for s in (sources or objects.workloads)
                  for b in objects.backends if objects.reach(s, b, network_only) == REACHES)


def table(rows: Iterable[Row]) -> str:
    """A Markdown table: a line per source, its reached backends."""
    by_source: dict[str, list[str]] = {}
    for row in rows:
        by_source.setdefault(row.source, []).append(row.backend)
    lines = ["| workload | backends it reaches |", "|---|---|"]
    lines += [f"| {source} | {', '.join(f'`{b}`' for b in backends)} |" for source, backends in sorted(by_source.items())]
    return "\n".join(lines) + "\n"


_NAME = r"[a-z0-9-]+"
# What any other pod of a namespace may reach, and why: (namespace, backend `<service>:<port>`, as
# regular expressions; the reason). Any other backend that such a pod reaches is a hole in a
# NetworkPolicy or an AuthorizationPolicy (tests/conformance/test_cluster_reach.py).
GRANTS = [
    (r".*", r"jaeger\.istio-system:4317", "OTLP spans: every Envoy sends them; Jaeger's other receivers admit nothing"),
    (r"monitoring", r"(kube-prometheus-stack-(prometheus|alertmanager|grafana|kube-state-metrics)|loki(-headless|-memberlist)?|alloy)\.monitoring:\d+",
     "the monitoring backends admit their own namespace (Grafana, the adapter, Alloy, each other, their scrapes)"),
    (r"monitoring", r"jaeger\.istio-system:(16685|16686|8888)", "Grafana's traces datasource and Jaeger's own metrics"),
    (r"monitoring", rf"{_NAME}\.{_NAME}:8002", "Triton's metrics port: the monitoring namespace stands for the operator's Prometheus"),
    (r"monitoring", rf"InferencePool {_NAME}\.{_NAME}:9000",
     "the OpenAI frontend's port serves /metrics too; its AuthorizationPolicy admits only GET /metrics from others than the gateway"),
    (r"monitoring", rf"{_NAME}-epp\.{_NAME}:9090", "the picker's metrics port"),
    (r"monitoring", rf"{_NAME}-(ray|head-svc)\.{_NAME}:8080", "Ray's metrics port"),
    # Open to every pod by design:
    (r".*", r"istiod\.istio-system:(15010|15012|15014|443)",
     "istiod: every proxy's configuration and certificate, its metrics, the injector's webhook"),
    (r".*", r"istio-ingressgateway\.istio-system:(80|443|15021)", "the ingress gateway: what outside clients reach (platformctl exposure)"),
    (r".*", rf"{_NAME}-istio\.{_NAME}:(80|443)", "a Gateway API gateway's listeners: what outside clients reach (platformctl exposure)"),
    (r".*", r"(kube-prometheus-stack-operator|prometheus-adapter)\.monitoring:443|"
            r"(jobset-webhook-service|kubeflow-trainer-controller-manager)\.kubeflow-system:443|"
            r"(kueue-webhook-service|kueue-visibility-server)\.kueue-system:443",
     "a webhook or an APIService the API server calls, which a NetworkPolicy cannot name portably "
     "(the hardening ledger's CKV2_K8S_6 exceptions)"),
    (r".*", r"(jobset-metrics-service|kubeflow-trainer-controller-manager)\.kubeflow-system:(8443|10443)|"
            r"kueue-controller-manager-metrics-service\.kueue-system:8443",
     "controller metrics and health behind the controllers' own TLS and authorization (the hardening ledger's CKV2_K8S_6 exceptions)"),
    (r".*", r"kube-prometheus-stack-prometheus-node-exporter\.monitoring:9100",
     "node-exporter runs on the host network, which NetworkPolicy does not govern"),
]


def granted(source_namespace: str, backend: str) -> bool:
    """Whether a grant lets any other pod of a namespace reach a backend."""
    return any(re.fullmatch(ns, source_namespace) and re.fullmatch(pattern, backend) for ns, pattern, _ in GRANTS)




def grants_table() -> str:
    """docs/serving.md's table of the grants (a cell's `|` escaped for Markdown)."""
    cell = lambda text: text.replace("|", "\\|")  # noqa: E731
    lines = ["| any other pod of | may reach | why |", "|---|---|---|"]
    lines += [f"| `{cell(ns)}` | `{cell(pattern)}` | {cell(why)} |" for ns, pattern, why in GRANTS]
    return "\n".join(lines) + "\n"


# ---- the wiring: the connections the platform configures ------------------------------------------

class Edge(NamedTuple):
    sources: tuple[str, ...]  # workload names; one must reach
    service: str  # "<name>.<namespace>", or "pod <workload name>"
    port: int
    why: str
    paths: tuple[str, ...] = ()  # the requests' paths, where the wiring says (a route's matches)
    token: bool = False  # the caller forwards the end user's token (a JWT-checked route)


_URL = re.compile(r"\b(https?|grpc)://([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)"
                  r"(\.svc(\.cluster\.local)?)?(:(\d+))?")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def service_urls(value: Any) -> Iterator[tuple[str, int]]:
    """Every in-cluster Service URL (`<scheme>://<name>.<namespace>.svc[.cluster.local][:port]`)
    in a nested value, as (service, port)."""
    return (url for _, url in _value_urls(value))


def _value_urls(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], tuple[str, int]]]:
    """service_urls with the key path of each (list items share their list's)."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _value_urls(v, (*path, str(k)))
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _value_urls(v, path)
    elif isinstance(value, str):
        for m in _URL.finditer(value):
            if m.group(6) is None:
                continue  # not a Service name (an external host such as example.com)
            port = int(m.group(9)) if m.group(9) else _DEFAULT_PORTS.get(m.group(1))
            if port is not None:
                yield path, (f"{m.group(2)}.{m.group(4)}", port)


def _names(workloads: Iterable[Workload], keep: Callable[[Workload], bool]) -> tuple[str, ...]:
    return tuple(w.name for w in workloads if keep(w))


def scrape_edges(objects: Objects) -> Iterator[Edge]:
    """Prometheus -> every PodMonitor's and ServiceMonitor's targets (the platform's Prometheus
    selects every monitor of every namespace: *SelectorNilUsesHelmValues false)."""
    prometheus = _names(objects.workloads, lambda w: w.name.startswith("Prometheus "))
    if not prometheus:
        return
    for monitor in objects.of("PodMonitor"):
        ns, spec = monitor["metadata"].get("namespace") or "default", monitor["spec"]
        namespaces = _monitor_namespaces(spec, ns)
        for endpoint in spec.get("podMetricsEndpoints", []):
            for w in objects.workloads:
                if (namespaces is None or w.namespace in namespaces) and matches(spec.get("selector"), w.labels):
                    port = endpoint.get("portNumber") or w.ports.get(endpoint.get("port", ""))
                    if isinstance(endpoint.get("targetPort"), int):
                        port = endpoint["targetPort"]
                    if port:
                        yield Edge(prometheus, f"pod {w.name}", int(port), f"PodMonitor {ns}/{monitor['metadata']['name']}")
    for monitor in objects.of("ServiceMonitor"):
        ns, spec = monitor["metadata"].get("namespace") or "default", monitor["spec"]
        namespaces = _monitor_namespaces(spec, ns)
        for endpoint in spec.get("endpoints", []):
            for b in objects.backends:
                if ((namespaces is None or b.namespace in namespaces) and matches(spec.get("selector"), b.labels)
                        and endpoint.get("port") in (b.name, None)):
                    yield Edge(prometheus, b.service, b.port, f"ServiceMonitor {ns}/{monitor['metadata']['name']}")


def _monitor_namespaces(spec: Mapping, own: str) -> Optional[set[str]]:
    selector = spec.get("namespaceSelector") or {}
    if selector.get("any"):
        return None
    return set(selector.get("matchNames") or [own])


def route_edges(objects: Objects) -> Iterator[Edge]:
    """The classic ingress gateway -> every VirtualService destination it routes to; a Gateway
    API gateway -> its HTTPRoutes' InferencePools' model servers and each pool's picker; the
    picker -> its model servers (it reads their metrics on the pool's target port)."""
    for vs in objects.of("VirtualService"):
        gateways = [g for g in objects.of("Gateway") if g["apiVersion"].startswith("networking.istio.io/")
                    and f"{g['metadata'].get('namespace')}/{g['metadata']['name']}" in (vs["spec"].get("gateways") or [])]
        for g in gateways:
            sources = _names(objects.workloads, lambda w, g=g: not w.name.startswith("Gateway pods ")
                             and matches({"matchLabels": g["spec"].get("selector") or {}}, w.labels))
            for rule in vs["spec"].get("http", []):
                paths = tuple(m["uri"].get("exact") or m["uri"]["prefix"] for m in rule.get("match", [])
                              if "exact" in m.get("uri", {}) or "prefix" in m.get("uri", {}))
                for r in rule.get("route", []):
                    host, port = r["destination"]["host"], r["destination"].get("port", {}).get("number", 80)
                    yield Edge(sources, ".".join(host.split(".")[:2]), port, f"VirtualService {vs['metadata']['name']}", paths)
    pools = {(p["metadata"].get("namespace") or "default", p["metadata"]["name"]): p["spec"] for p in objects.of("InferencePool")}
    for route in objects.of("HTTPRoute"):
        ns = route["metadata"].get("namespace") or "default"
        for parent in route["spec"].get("parentRefs", []):
            sources = tuple(w.name for w in objects.workloads if w.name == f"Gateway pods {ns}/{parent['name']}-istio")
            for rule in route["spec"].get("rules", []):
                paths = tuple(m["path"]["value"] for m in rule.get("matches", []) if "path" in m)
                for ref in rule.get("backendRefs", []):
                    pool = pools.get((ns, ref["name"]))
                    if ref.get("kind") != "InferencePool" or pool is None:
                        continue
                    yield from _pool_edges(objects, sources, ns, ref["name"], pool, paths)


def _pool_edges(objects: Objects, gateway: tuple[str, ...], ns: str, name: str, pool: Mapping,
                paths: tuple[str, ...]) -> Iterator[Edge]:
    selector = pool["selector"].get("matchLabels", pool["selector"])
    servers = [w for w in objects.workloads if w.namespace == ns and matches({"matchLabels": selector}, w.labels)]
    picker_ref = pool.get("endpointPickerRef") or {}
    picker = f"{picker_ref.get('name')}.{ns}"
    pickers = tuple(w.name for b in objects.backends if b.service == picker for w, _ in objects.pods_of(b))
    for port in [p["number"] for p in pool.get("targetPorts", [])]:
        for w in servers:
            # The gateway forwards the client's token (forwardOriginalToken), which the model
            # servers' own RequestAuthentication checks again.
            yield Edge(gateway, f"pod {w.name}", port, f"InferencePool {ns}/{name}", paths, token=True)
            yield Edge(tuple(dict.fromkeys(pickers)), f"pod {w.name}", port, f"the picker of InferencePool {ns}/{name}",
                       ("/metrics",))
    if picker_ref:
        yield Edge(gateway, picker, int((picker_ref.get("port") or {}).get("number", 9002)), f"InferencePool {ns}/{name}'s endpoint picker")


def edge_answer(objects: Objects, edge: Edge) -> str:
    """reaches when some source of the edge reaches it; else the first source's refusal."""
    if not edge.sources:
        return "no source pods"
    user = "end-user/token" if edge.token else None
    sources = [s for s in objects.workloads if s.name in edge.sources]
    if edge.service.startswith("pod "):
        (target,) = [w for w in objects.workloads if w.name == edge.service[4:]]
        answers = [objects.answer(s, target, edge.port, paths=edge.paths, request_principal=user) for s in sources]
    else:
        backends = [b for b in objects.backends if b.service == edge.service and b.port == edge.port]
        if not backends:
            return f"no Service port {edge.service}:{edge.port}"
        answers = [objects.reach(s, backends[0], paths=edge.paths, request_principal=user) for s in sources]
    return REACHES if REACHES in answers else (answers or ["no source pods"])[0]


# Who calls the in-cluster URLs of a release's values: (release, first key of the values path) ->
# a filter of the release's workloads. `external_url`s are the browser's, not a pod's.
_VALUE_CALLERS: dict[tuple[str, str], Callable[[Workload], bool]] = {
    ("alloy", "alloy"): lambda w: True,
    ("kiali", "external_services"): lambda w: w.labels.get("app.kubernetes.io/name") == "kiali",
    ("kube-prometheus-stack", "grafana"): lambda w: w.labels.get("app.kubernetes.io/name") == "grafana",
    ("prometheus-adapter", "prometheus"): lambda w: True,
}


def wired_url_edges(objects: Objects) -> Iterator[Edge]:
    """Each in-cluster URL a release's values or a pod template names, from the pods that call it;
    istiod's OpenTelemetry provider from every pod with an Envoy (its spans). A URL in a release's
    values with no known caller raises, so new wiring cannot pass unchecked."""
    for release, values in objects.release_values.items():
        for path, (service, port) in _value_urls(values):
            if path[-1] == "external_url":
                continue
            keep = _VALUE_CALLERS.get((release, path[0]))
            if keep is None:
                raise ValueError(f"release {release}: no caller known for {service}:{port} at {'.'.join(path)}")
            if path[-1] == "url" and isinstance(_dig(values, path[:-1]), Mapping) and "port" in _dig(values, path[:-1]):
                port = int(_dig(values, path[:-1])["port"])  # prometheus-adapter: prometheus.url, prometheus.port
            yield Edge(_names(objects.workloads, lambda w, release=release, keep=keep: w.release == release and keep(w)), service, port,
                       f"release {release} {'.'.join(path)}")
        for provider in ((values.get("meshConfig") or {}).get("extensionProviders") or []):
            otel = provider.get("opentelemetry")
            if otel:
                service = ".".join(otel["service"].split(".")[:2])
                for w in objects.workloads:
                    if w.mesh and not w.host_network:
                        yield Edge((w.name,), service, int(otel["port"]), f"istiod meshConfig {provider['name']} (spans)")
    for d in objects.of("ConfigMap"):
        # kube-prometheus-stack's Grafana datasources, which its sidecar loads by this label.
        if "grafana_datasource" in (d["metadata"].get("labels") or {}) and id(d) in objects.release_of:
            release = objects.release_of[id(d)]
            for service, port in service_urls(d.get("data")):
                yield Edge(_names(objects.workloads, lambda w, release=release: w.release == release and w.labels.get("app.kubernetes.io/name") == "grafana"),
                           service, port, f"Grafana datasource ConfigMap {d['metadata']['name']}")
    for d in objects.docs:
        if d["kind"] in POD_TEMPLATE_PATHS and id(d) not in objects.release_of:
            ns = d["metadata"].get("namespace") or "default"
            for service, port in service_urls((_dig(d, POD_TEMPLATE_PATHS[d["kind"]]) or {}).get("spec")):
                yield Edge((f"{d['kind']} {ns}/{d['metadata']['name']}",), service, port, "its pod template")


def wiring(objects: Objects) -> list[Edge]:
    """Every connection the platform configures."""
    return [*scrape_edges(objects), *route_edges(objects), *wired_url_edges(objects), *ray_edges(objects)]


def ray_edges(objects: Objects) -> Iterator[Edge]:
    """KubeRay's operator -> each RayService head's dashboard (it submits the Serve application
    through the dashboard's URL, rayservice_controller.go FetchHeadServiceURL with the dashboard
    port); each worker group -> its head's GCS (`ray start --address`)."""
    operator = _names(objects.workloads, lambda w: w.account == "kuberay-operator" and not w.name.startswith("Job "))
    for rs in objects.of("RayService"):
        ns, name = rs["metadata"].get("namespace") or "default", rs["metadata"]["name"]
        head = f"{name}-head-svc.{ns}"
        ports = {b.name: b.port for b in objects.backends if b.service == head}
        if "dashboard" in ports:
            yield Edge(operator, head, ports["dashboard"], f"KubeRay submits RayService {ns}/{name}'s application")
        workers = _names(objects.workloads, lambda w, ns=ns, name=name: w.name.startswith(f"RayService {ns}/{name} ") and not w.name.endswith(" head"))
        if "gcs-server" in ports and workers:
            yield Edge(workers, head, ports["gcs-server"], f"RayService {ns}/{name}'s workers join the head")

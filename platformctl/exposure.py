"""Who may reach what from outside: for every host the plan's gateways serve, each probed path and
each kind of credential, the answer a client gets, derived from the rendered objects through the
request model of platformctl/mesh_eval.py.

Two ingress paths, as Istio 1.30.3 runs them:
- the classic ingress gateway (an Istio Gateway's servers, VirtualServices, the Basic Auth
  EnvoyFilter and the gateway's AuthorizationPolicies: mesh_eval.gateway), then the backend
  Service's pods (their RequestAuthentication and AuthorizationPolicies);
- a Gateway API Gateway of class istio (an LLM service's own): its listeners, the HTTPRoutes
  bound to it, the RequestAuthentication and AuthorizationPolicies whose targetRefs name it or
  whose selector takes its pods, then the InferencePool's model servers with their policies.
  An HTTPRoute PathPrefix is a path-separated prefix with a trailing '/' ignored (istio 1.30.3
  pilot/pkg/config/kube/gateway/conversion.go:1548-1555 createURIMatch, then
  pilot/pkg/networking/core/route/route.go:1099-1102 PathSeparatedPrefix for gateway
  semantics); istiod's Service for the Gateway has the listeners' ports only
  (pilot/pkg/config/kube/gatewaycommon/deploymentcontroller.go:911 extractServicePorts), so a
  plain-HTTP request to a Gateway without an HTTP listener finds no port; the gateway pods call
  the model servers as the ServiceAccount `<gateway>-istio` (platformctl/gateway_pods.py).

The credential kinds: none; wrong (a Basic credential with a password nobody holds, or a token
no issuer signed); valid (the service's own Basic user and password, or a token of its issuer
for its audience); valid over plain HTTP (port 80). What a host requires comes from the stack's
settings, not from the objects, so an object missing from the plan shows as an answer that
breaks the rules (tests/plan/test_exposure.py).
"""

from __future__ import annotations

import base64
import re
from typing import Any, Iterable, Mapping, NamedTuple, Optional

from platformctl import mesh_eval
from platformctl.gateway_pods import ROOT_NAMESPACE, _documents, gateway_pods, matches

CREDENTIALS = ("none", "wrong", "valid", "valid over plain HTTP")
SERVED, REFUSED, REDIRECTED = "served", "no listener", "301 to HTTPS"
# A backend Service the plan renders no object for (a chart's or an operator's, e.g. Grafana's or a
# Ray Serve application's): the gateway forwards, the pods' policies and login are not modelled.
FORWARDED = "forwarded to"
PASSWORD_TYPE = "random:index/randomPassword:RandomPassword"
RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


class Auth(NamedTuple):
    """What a host asks of a client: `basic` (its user), `jwt` (issuer, key set, audience) or
    `none` (the backend's own login, if any)."""
    mode: str
    user: str = ""
    issuer: str = ""
    jwks_uri: str = ""
    audience: str = ""


class Ingress(NamedTuple):
    """The classic ingress gateway's pods: their namespace, labels and mesh identity."""
    namespace: str
    labels: Mapping[str, str]
    principal: str


PLATFORM_INGRESS = Ingress(ROOT_NAMESPACE, {"istio": "ingressgateway", "app": "istio-ingressgateway"},
                           "cluster.local/ns/istio-system/sa/istio-ingressgateway")


class Row(NamedTuple):
    host: str
    path: str
    credential: str
    answer: str


def auth_of(item: Any) -> Auth:
    """The Auth of a settings Service or Graph."""
    auth = item.auth
    if auth.mode == "jwt":
        return Auth("jwt", issuer=auth.jwt.issuer, jwks_uri=str(auth.jwt.jwks_uri),
                    audience=(auth.jwt.audiences or [""])[0])
    return Auth(auth.mode, user=item.name if auth.mode == "basic" else "")


def settings_auth(settings: Any) -> dict[str, Auth]:
    """Host -> Auth for every service and graph of a stack's settings."""
    return {host: auth_of(item) for item in [*settings.services, *settings.graphs] for host in item.hosts}


class _Objects:
    """The plan's Kubernetes objects by kind, and what a row needs beside them."""

    def __init__(self, resources: Iterable[Mapping[str, Any]], passwords: Mapping[str, str]):
        resources = list(resources)
        self.docs = [doc for doc in _documents(resources) if doc["kind"] != "Release"]
        self.passwords = passwords
        self.releases = [r["inputs"] for r in resources if r["type"] == RELEASE_TYPE]

    def of(self, kind: str, namespace: Optional[str] = None) -> list[dict]:
        return [d for d in self.docs if d["kind"] == kind
                and (namespace is None or d["metadata"].get("namespace") == namespace)]

    def selecting(self, kind: str, namespace: str, labels: Mapping[str, str]) -> list[dict]:
        """Specs of the policies of `kind` that apply to pods with `labels` in `namespace` by
        selector (none: all): their own namespace's and the root namespace's, which istiod looks
        up for every workload (istio 1.30.3 pilot/pkg/model/authorization.go:97-106)."""
        return [d["spec"] for ns in {namespace, ROOT_NAMESPACE} for d in self.of(kind, ns)
                if "targetRefs" not in d["spec"] and "targetRef" not in d["spec"]
                and matches(d["spec"].get("selector"), labels)]

    def targeting(self, kind: str, namespace: str, gateway: str) -> list[dict]:
        return [d["spec"] for d in self.of(kind, namespace)
                if any(t.get("kind") == "Gateway" and t.get("name") == gateway for t in d["spec"].get("targetRefs", []))]


def _credential_headers(auth: Auth, credential: str, objects: _Objects) -> dict[str, str]:
    if credential == "none" or (auth.mode == "none" and credential != "wrong"):
        return {}
    if auth.mode == "jwt":
        signed_by = auth.jwks_uri if credential != "wrong" else "https://attacker.example.com/jwks.json"
        return {"authorization": "Bearer " + mesh_eval.jwt_token(auth.issuer, "client", [auth.audience], signed_by)}
    user = auth.user or "client"
    password = _password_of(user, objects.passwords) if credential != "wrong" else None
    secret = base64.b64encode(f"{user}:{password or 'not-the-password'}".encode()).decode()
    return {"authorization": f"Basic {secret}"}


def _password_of(user: str, passwords: Mapping[str, str]) -> Optional[str]:
    """A Basic user's generated password: `<user>-password`, or `<component>-password` of the
    component named `<user>-<suffix>` that serves it (components/mesh/basic_auth.py _password)."""
    if f"{user}-password" in passwords:
        return passwords[f"{user}-password"]
    found = [v for k, v in passwords.items() if k.startswith(f"{user}-") and k.endswith("-password")
             and not k.endswith("-admin-password")]
    return found[0] if len(found) == 1 else None


def _is_grpc(path: str) -> bool:
    # A gRPC method is /<package.Service>/<Method>: its first segment is a qualified name.
    first = path.split("/")[1] if path.count("/") >= 2 else ""
    return "." in first


def _pod_answer(objects: _Objects, namespace: str, labels: Mapping[str, str], port: int, principal: str,
                path: str, headers: Mapping[str, object]) -> str:
    rules = [r for ra in objects.selecting("RequestAuthentication", namespace, labels) for r in ra["jwtRules"]]
    passed = mesh_eval.jwt_authn(rules, headers)
    if passed is None:
        return "401"
    request_principal, forwarded = passed
    policies = objects.selecting("AuthorizationPolicy", namespace, labels)
    if not mesh_eval.allowed(policies, principal, port, path, headers=forwarded,
                             request_principal=request_principal, method="POST"):
        return "403"
    return f"{SERVED} (port {port})"


def _one(answers: Iterable[str]) -> str:
    distinct = list(dict.fromkeys(answers))
    return distinct[0] if len(distinct) == 1 else " / ".join(distinct)


class _Backend(NamedTuple):
    namespace: str
    labels: Mapping[str, str]
    port: int


def _service_backend(objects: _Objects, host: str, port: int) -> Optional[_Backend]:
    """The pods behind `<service>.<namespace>.svc.cluster.local:port` and the container port;
    None for a Service the plan renders no object for (a chart's, e.g. Grafana's)."""
    name, namespace = host.split(".")[:2]
    found = [s for s in objects.of("Service", namespace) if s["metadata"]["name"] == name]
    if not found:
        return None
    (service,) = found
    (entry,) = [p for p in service["spec"]["ports"] if p["port"] == port]
    labels, target = service["spec"]["selector"], entry.get("targetPort", port)
    if isinstance(target, str):
        target = next((c["containerPort"] for d in objects.of("Deployment", namespace)
                       if matches({"matchLabels": d["spec"]["selector"].get("matchLabels", {})}, labels)
                       for container in d["spec"]["template"]["spec"]["containers"]
                       for c in container.get("ports", []) if c.get("name") == target), port)
    return _Backend(namespace, labels, int(target))


def _classic_rows(objects: _Objects, ingress: Ingress, vs: Mapping, auth: Mapping[str, Auth]) -> list[Row]:
    spec = vs["spec"]
    gateways = [g for g in objects.of("Gateway") if g["apiVersion"].startswith("networking.istio.io/")
                and f"{g['metadata']['namespace']}/{g['metadata']['name']}" in spec.get("gateways", [])]
    policies = objects.selecting("AuthorizationPolicy", ingress.namespace, ingress.labels)
    filters = [f["spec"] for ns in {ingress.namespace, ROOT_NAMESPACE} for f in objects.of("EnvoyFilter", ns)
               if matches({"matchLabels": (f["spec"].get("workloadSelector") or {}).get("labels") or {}}, ingress.labels)
               and "BasicAuth" in str(f["spec"]["configPatches"][0]["patch"]["value"].get("typed_config", {}).get("@type"))]
    destinations = {(d["destination"]["host"], d["destination"]["port"]["number"])
                    for rule in spec["http"] for d in rule.get("route", [])}
    backends = {port: (host, _service_backend(objects, host, port)) for host, port in destinations}
    pod_policies = [p for _, b in backends.values() if b for p in objects.selecting("AuthorizationPolicy", b.namespace, b.labels)]
    route_paths = [m["uri"].get("exact") or m["uri"].get("prefix") for rule in spec["http"]
                   for m in rule.get("match", []) if "uri" in m and ("exact" in m["uri"] or "prefix" in m["uri"])]
    rows = []
    for host in spec["hosts"]:
        envoy_filter = next((f for f in filters if any(p["match"]["routeConfiguration"]["vhost"]["domainName"] == host
                                                       for p in f["configPatches"][1:])), None)
        plain = [s for g in gateways for s in g["spec"]["servers"] if s["port"]["protocol"] == "HTTP"
                 and (host in s["hosts"] or "*" in s["hosts"])]
        host_auth = auth.get(host, Auth("none"))
        for path in mesh_eval.probe_paths(pod_policies, route_paths):
            for credential in CREDENTIALS:
                headers = {"host": host, **_credential_headers(host_auth, credential, objects),
                           **({"content-type": "application/grpc"} if _is_grpc(path) else {})}
                over_http = credential == CREDENTIALS[3]
                if over_http and gateways and not plain:
                    rows.append(Row(host, path, credential, REFUSED))
                    continue
                redirected = over_http and any((s.get("tls") or {}).get("httpsRedirect") for s in plain)
                answers = []
                for header_values in mesh_eval.HEADER_VALUES:
                    kind, value = mesh_eval.gateway(spec, policies, envoy_filter, host, path, headers,
                                                    header_values, redirected)
                    if kind == "status":
                        answers.append(REDIRECTED if value == 301 else str(value))
                        continue
                    destination, b = backends[value]
                    if b is None:
                        answers.append(f"{FORWARDED} {destination.split('.')[0]}")
                        continue
                    forwarded = dict(headers)
                    if envoy_filter is not None and "authorization" in forwarded:
                        forwarded["authorization"] = host_auth.user  # forward_username_header
                    answers.append(_pod_answer(objects, b.namespace, b.labels, b.port, ingress.principal, path, forwarded))
                rows.append(Row(host, path, credential, _one(answers)))
    return rows


def _path_matches(match: Mapping, path: str) -> bool:
    spec = match.get("path") or {"type": "PathPrefix", "value": "/"}
    value, kind = spec.get("value", "/"), spec.get("type", "PathPrefix")
    assert kind in ("Exact", "PathPrefix"), f"HTTPRoute path type not modelled: {kind}"
    if kind == "Exact":
        return path == value
    prefix = value.rstrip("/") if value != "/" else "/"
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


def _headers_match(match: Mapping, headers: Mapping[str, object]) -> bool:
    for h in match.get("headers", []):
        kind = h.get("type", "Exact")
        assert kind in ("Exact", "RegularExpression"), f"HTTPRoute header type not modelled: {kind}"
        value = headers.get(h["name"].lower())
        if not isinstance(value, str) or not (value == h["value"] if kind == "Exact" else re.fullmatch(h["value"], value)):
            return False
    assert set(match) <= {"path", "headers"}, f"HTTPRouteMatch fields not modelled: {set(match)}"
    return True


def _api_gateway_rows(objects: _Objects, gateway: Mapping, pod_labels: Mapping[str, str],
                      auth: Mapping[str, Auth]) -> list[Row]:
    namespace, name = gateway["metadata"]["namespace"], gateway["metadata"]["name"]
    routes = [r["spec"] for r in objects.of("HTTPRoute", namespace)
              if any(p.get("kind", "Gateway") == "Gateway" and p["name"] == name for p in r["spec"]["parentRefs"])]
    rules = [r for route in routes for r in route["rules"]]
    gateway_jwt = [r for ra in (objects.targeting("RequestAuthentication", namespace, name)
                                + objects.selecting("RequestAuthentication", namespace, pod_labels)) for r in ra["jwtRules"]]
    gateway_policies = (objects.targeting("AuthorizationPolicy", namespace, name)
                        + objects.selecting("AuthorizationPolicy", namespace, pod_labels))
    principal = f"cluster.local/ns/{namespace}/sa/{name}-istio"
    pools = {(rel["namespace"], rel["name"]): rel["values"]["router"]["modelServers"] for rel in objects.releases
             if "modelServers" in ((rel.get("values") or {}).get("router") or {})}

    def backends(rule: Mapping) -> list[_Backend]:
        out = []
        for ref in rule["backendRefs"]:
            assert ref.get("kind") == "InferencePool", f"HTTPRoute backend not modelled: {ref.get('kind')}"
            servers = pools[(namespace, ref["name"])]
            out.append(_Backend(namespace, servers["matchLabels"], servers["targetPorts"][0]["number"]))
        return out

    pod_policies = [p for rule in rules for b in backends(rule)
                    for p in objects.selecting("AuthorizationPolicy", b.namespace, b.labels)]
    route_paths = [m["path"]["value"] for rule in rules for m in rule.get("matches", []) if "path" in m]
    rows = []
    listener_hosts = {listener.get("hostname") for listener in gateway["spec"]["listeners"]}
    hosts = sorted({h for route in routes for h in route.get("hostnames", [])
                    if None in listener_hosts or h in listener_hosts})
    for host in hosts:
        host_auth = auth.get(host, Auth("none"))
        plain = any(listener["protocol"] == "HTTP" and listener.get("hostname") in (None, host)
                    for listener in gateway["spec"]["listeners"])
        for path in mesh_eval.probe_paths(pod_policies, route_paths):
            for credential in CREDENTIALS:
                if credential == CREDENTIALS[3] and not plain:
                    rows.append(Row(host, path, credential, REFUSED))
                    continue
                headers = {"host": host, **_credential_headers(host_auth, credential, objects)}
                rows.append(Row(host, path, credential, _api_answer(objects, rules, backends, gateway_jwt,
                                                                    gateway_policies, principal, host, path, headers)))
    return rows


def _api_answer(objects, rules, backends, gateway_jwt, gateway_policies, principal, host, path, headers) -> str:
    rule = next((r for r in rules if any(_path_matches(m, path) and _headers_match(m, headers)
                                         for m in r.get("matches") or [{}])), None)
    if rule is None:
        return "404"
    passed = mesh_eval.jwt_authn(gateway_jwt, headers)
    if passed is None:
        return "401"
    request_principal, forwarded = passed
    if not mesh_eval.allowed(gateway_policies, "", 443, path, host=host, headers=forwarded,
                             request_principal=request_principal, method="POST"):
        return "403"
    return _one(_pod_answer(objects, b.namespace, b.labels, b.port, principal, path, forwarded) for b in backends(rule))


def exposure(plan_resources: Iterable[Any], auth: Mapping[str, Auth], ingress: Ingress = PLATFORM_INGRESS) -> list[Row]:
    """Every (host, path, credential, answer) of a rendered plan's resources (engine.Plan's,
    which hold the generated passwords); `auth`: what each host requires; `ingress`: the
    classic gateway's pods."""
    plan_resources = list(plan_resources)
    resources = [r.to_json() for r in plan_resources]
    passwords = {r.name: (r.outputs or {}).get("result") for r in plan_resources if r.type == PASSWORD_TYPE}
    objects = _Objects(resources, passwords)
    rows = [row for vs in objects.of("VirtualService") if set(vs["spec"].get("gateways") or ["mesh"]) - {"mesh"}
            for row in _classic_rows(objects, ingress, vs, auth)]
    for gateway, labels in gateway_pods(resources):
        assert labels is not None, f"Gateway class not modelled: {gateway['spec'].get('gatewayClassName')}"
        rows += _api_gateway_rows(objects, gateway, labels, auth)
    return sorted(rows)


def table(rows: Iterable[Row]) -> str:
    """A Markdown table: a line per host and path, a column per credential kind."""
    by_path: dict[tuple[str, str], dict[str, str]] = {}
    for row in rows:
        by_path.setdefault((row.host, row.path), {})[row.credential] = row.answer
    lines = ["| host | path | " + " | ".join(CREDENTIALS) + " |", "|---|---|" + "---|" * len(CREDENTIALS)]
    lines += [f"| {host} | `{path}` | " + " | ".join(answers[c] for c in CREDENTIALS) + " |"
              for (host, path), answers in sorted(by_path.items())]
    return "\n".join(lines) + "\n"


# The stack whose table docs/serving.md shows.
DOCUMENTED_STACK = "acme-prod"


def stack_exposure(stack: str, stack_file: Optional[Any] = None) -> list[Row]:
    """The rows of a platform stack, rendered now from its stack file."""
    from platformctl.engine import render_stack, stack_path, stack_settings

    path = stack_file or stack_path(stack)
    return exposure(render_stack(stack, path).resources, settings_auth(stack_settings(path)))


def documented_table() -> str:
    """docs/serving.md's exposure table."""
    return table(stack_exposure(DOCUMENTED_STACK))

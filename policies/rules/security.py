"""Security policies: pod hardening, pinned images, exposure, mesh security, secrets, auth."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from .kube import (
    HELM_RELEASE,
    INJECTION_LABEL,
    api_group,
    containers,
    fix,
    get,
    image_problem,
    is_kind,
    items,
    labels_of,
    mappings,
    name_of,
    namespace_of,
    pod_specs,
    release_name,
    release_namespace,
    schema,
    setting,
)
from .secrets import literal, parse_document, secret_like, secret_literals

MANDATORY = EnforcementLevel.MANDATORY
ISTIO_GROUPS = ("networking.istio.io", "security.istio.io", "telemetry.istio.io")


def _container_label(field: str, c: Mapping) -> str:
    what = {"initContainers": "init container", "ephemeralContainers": "ephemeral container"}.get(field, "container")
    return f"{what} {get(c, 'name', default='?')!r}"


# --------------------------------------------------------------------------- (1) Pod Security restricted


def restricted_problems(pod: Mapping) -> list[str]:
    """What keeps a pod spec from Pod Security "restricted" (the fields this platform controls)."""
    problems = [f"{f}: true" for f in ("hostNetwork", "hostPID", "hostIPC") if get(pod, f) is True]
    problems += [f"hostPath volume {get(v, 'name')!r}" for v in items(get(pod, "volumes")) if get(v, "hostPath") is not None]
    pod_sc = get(pod, "securityContext", default={})
    for field, c in containers(pod):
        sc = get(c, "securityContext", default={})
        who = _container_label(field, c)
        if get(sc, "runAsNonRoot", default=get(pod_sc, "runAsNonRoot")) is not True:
            problems.append(f"{who} lacks runAsNonRoot: true")
        if get(sc, "runAsUser", default=get(pod_sc, "runAsUser")) == 0:
            problems.append(f"{who} runs as uid 0")
        if get(sc, "privileged") is True:
            problems.append(f"{who} is privileged")
        if get(sc, "allowPrivilegeEscalation") is not False:
            problems.append(f"{who} lacks allowPrivilegeEscalation: false")
        if "ALL" not in [str(x) for x in items(get(sc, "capabilities", "drop"))]:
            problems.append(f"{who} does not drop ALL capabilities")
        added = [str(x) for x in items(get(sc, "capabilities", "add")) if x != "NET_BIND_SERVICE"]
        if added:
            problems.append(f"{who} adds capabilities {', '.join(added)}")
        seccomp = get(sc, "seccompProfile", "type", default=get(pod_sc, "seccompProfile", "type"))
        if seccomp not in ("RuntimeDefault", "Localhost"):
            problems.append(f"{who} has no RuntimeDefault or Localhost seccomp profile")
    return problems


def _pod_security(args: ResourceValidationArgs, report) -> None:
    if namespace_of(args.props) in setting(args, "systemNamespaces"):
        return
    for problems in filter(None, (restricted_problems(pod) for pod in pod_specs(args.resource_type, args.props))):
        report(fix(
            "pod template is not Pod Security restricted: " + "; ".join(problems),
            "set runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities.drop [ALL] and "
            "seccompProfile.type RuntimeDefault in each container's securityContext, and drop host namespaces "
            "and hostPath volumes (system components belong in a namespace listed in systemNamespaces)",
        ), None)


pod_security_restricted = ResourceValidationPolicy(
    name="pod-security-restricted",
    description="Workload pod templates meet Pod Security 'restricted', except in named system namespaces.",
    enforcement_level=MANDATORY,
    validate=_pod_security,
    config_schema=schema("systemNamespaces"),
)


# --------------------------------------------------------------------------- (2) privileged


def _no_privileged(args: ResourceValidationArgs, report) -> None:
    allowed = setting(args, "privilegedNamespaces")
    hint = "remove securityContext.privileged (grant single capabilities if needed); only the GPU operator " \
           "and CSI charts may run privileged, in their own namespaces (privilegedNamespaces)"
    if namespace_of(args.props) not in allowed:
        for pod in pod_specs(args.resource_type, args.props):
            for field, c in containers(pod):
                if get(c, "securityContext", "privileged") is True:
                    report(fix(f"{_container_label(field, c)} is privileged", hint), None)
    if args.resource_type == HELM_RELEASE and release_namespace(args.props) not in allowed:
        for path, m in mappings(get(args.props, "values", default={})):
            if m.get("privileged") is True:
                report(fix(f"Helm values {path or '<root>'}.privileged is true in namespace "
                           f"{release_namespace(args.props)}", hint), None)


no_privileged_containers = ResourceValidationPolicy(
    name="no-privileged-containers",
    description="No privileged containers outside the GPU operator's and CSI charts' own namespaces.",
    enforcement_level=MANDATORY,
    validate=_no_privileged,
    config_schema=schema("privilegedNamespaces"),
)


# --------------------------------------------------------------------------- (3) images pinned

_TAG_KEYS = ("tag", "imageTag", "image_version", "imageVersion")
_VERSION_KEYS = ("tag", "version", "digest", "imageTag")


def helm_image_problems(values: Any) -> list[str]:
    """Unpinned images in Helm values: `image: repo:latest`, `image: repo` or `tag: latest`."""
    out = []
    for path, m in mappings(values):
        image = m.get("image")
        # Split form (repository / image / version or tag): the sibling keys carry the pin.
        split = any(k in m for k in _VERSION_KEYS) or "repository" in m
        if isinstance(image, str) and image and not split:
            problem = image_problem(image)
            if problem:
                out.append(f"{path + '.' if path else ''}image {image!r} {problem}")
        for key in _TAG_KEYS:
            if m.get(key) == "latest":
                out.append(f"{path + '.' if path else ''}{key} is 'latest'")
    return out


def _images_pinned(args: ResourceValidationArgs, report) -> None:
    hint = "pin the image to a release tag (e.g. :25.01-py3) or a digest (@sha256:...) in the stack file (e.g. services[].versions[].image)"
    for pod in pod_specs(args.resource_type, args.props):
        for field, c in containers(pod):
            problem = image_problem(get(c, "image", default=""))
            if problem:
                report(fix(f"{_container_label(field, c)} image {get(c, 'image', default='')!r} {problem}", hint), None)
    if args.resource_type == HELM_RELEASE:
        for problem in helm_image_problems(get(args.props, "values", default={})):
            report(fix(f"Helm values: {problem}", hint), None)


images_pinned = ResourceValidationPolicy(
    name="images-pinned",
    description="Container images are pinned: a tag other than 'latest' or a digest, in pods and Helm values.",
    enforcement_level=MANDATORY,
    validate=_images_pinned,
)


# --------------------------------------------------------------------------- (4) LoadBalancer


def _no_load_balancers(args: ResourceValidationArgs, report) -> None:
    gateway = setting(args, "ingressGateway")
    gw_ns, gw_releases = gateway.get("namespace", "istio-system"), list(gateway.get("releases", []))
    hint = "use a ClusterIP Service and route through the Istio ingress gateway (a VirtualService on its Gateway)"
    if is_kind(args.resource_type, "Service") and get(args.props, "spec", "type") == "LoadBalancer":
        if not (namespace_of(args.props) == gw_ns and name_of(args.props) in gw_releases):
            report(fix(f"Service {namespace_of(args.props)}/{name_of(args.props) or args.name} is of type LoadBalancer", hint), None)
    if args.resource_type == HELM_RELEASE:
        if release_namespace(args.props) == gw_ns and release_name(args.name, args.props) in gw_releases:
            return
        for path, m in mappings(get(args.props, "values", default={})):
            for key in m:
                if str(key).lower().endswith("service") and get(m, key, "type") == "LoadBalancer":
                    where = f"{path}.{key}" if path else str(key)
                    report(fix(f"Helm values {where}.type is LoadBalancer", hint), None)


no_loadbalancer_services = ResourceValidationPolicy(
    name="no-loadbalancer-services",
    description="No Service of type LoadBalancer (explicit or through Helm values) except the ingress gateway's.",
    enforcement_level=MANDATORY,
    validate=_no_load_balancers,
    config_schema=schema("ingressGateway"),
)


# --------------------------------------------------------------------------- (5) Gateway hosts


def wildcard(host: Any) -> bool:
    """`*`, `*/*`, `ns/*` and `*.example.com`: the host part (after `namespace/`) starts with `*`."""
    return isinstance(host, str) and host.rsplit("/", 1)[-1].startswith("*")


def _gateway_hosts(args: ResourceValidationArgs, report) -> None:
    if api_group(args.resource_type) != "networking.istio.io":
        return
    hint = "list the exact host names the stack serves (services[].hosts); never a wildcard"
    if is_kind(args.resource_type, "Gateway"):
        for i, server in enumerate(items(get(args.props, "spec", "servers"))):
            for host in items(get(server, "hosts")):
                if wildcard(host):
                    report(fix(f"Gateway servers[{i}] accepts the wildcard host {host!r}", hint), None)
    elif is_kind(args.resource_type, "VirtualService"):
        for host in items(get(args.props, "spec", "hosts")):
            if wildcard(host):
                report(fix(f"VirtualService binds the wildcard host {host!r}", hint), None)


gateway_hosts_not_wildcard = ResourceValidationPolicy(
    name="gateway-hosts-not-wildcard",
    description="Istio Gateway servers and VirtualServices name exact hosts, never '*' or '*/*'-style wildcards.",
    enforcement_level=MANDATORY,
    validate=_gateway_hosts,
)


# --------------------------------------------------------------------------- stack helpers


def injected_namespaces(resources: list) -> dict[str, Any]:
    """Inference namespaces (label istio-injection=enabled) by name -> their resource."""
    return {
        name_of(r.props): r
        for r in resources
        if is_kind(r.resource_type, "Namespace") and get(labels_of(r.props), INJECTION_LABEL) == "enabled"
    }


def of_kind(resources: list, group: str, kind_name: str) -> list:
    return [r for r in resources if api_group(r.resource_type) == group and is_kind(r.resource_type, kind_name)]


# --------------------------------------------------------------------------- (6) STRICT mTLS


def _mtls_strict(args: StackValidationArgs, report) -> None:
    resources = args.resources
    namespaces = injected_namespaces(resources)
    if not namespaces and not any(api_group(r.resource_type) in ISTIO_GROUPS for r in resources):
        return  # no mesh and no inference namespace: nothing to protect
    root = setting(args, "meshRootNamespace")
    hint = f"declare a PeerAuthentication with spec.mtls.mode STRICT (mesh-wide in {root}, or per namespace)"
    pas = of_kind(resources, "security.istio.io", "PeerAuthentication")

    def mode(r) -> Any:
        return get(r.props, "spec", "mtls", "mode")

    if not any(mode(r) == "STRICT" for r in pas):
        report(fix("the stack declares no PeerAuthentication with mtls mode STRICT", hint), None)
        return
    for r in pas:
        if mode(r) in ("DISABLE", "PERMISSIVE"):
            report(fix(f"PeerAuthentication {namespace_of(r.props)}/{name_of(r.props)} sets mtls mode {mode(r)}",
                       "use STRICT; exempt single ports with portLevelMtls where a client has no mesh identity"), r.urn)
    mesh_wide = any(mode(r) == "STRICT" and namespace_of(r.props) == root and not get(r.props, "spec", "selector") for r in pas)
    for ns, r in sorted(namespaces.items()):
        covered = mesh_wide or any(
            mode(p) == "STRICT" and namespace_of(p.props) == ns and not get(p.props, "spec", "selector") for p in pas
        )
        if not covered:
            report(fix(f"inference namespace {ns} has no namespace-wide STRICT PeerAuthentication", hint), r.urn)


mesh_mtls_strict = StackValidationPolicy(
    name="mesh-mtls-strict",
    description="STRICT mTLS is present: a STRICT PeerAuthentication covers every inference namespace.",
    enforcement_level=MANDATORY,
    validate=_mtls_strict,
    config_schema=schema("meshRootNamespace"),
)


# --------------------------------------------------------------------------- (7, 8) per-namespace policies


def _namespace_has(group: str, kind_name: str, hint: str):
    def validate(args: StackValidationArgs, report) -> None:
        present = {namespace_of(r.props) for r in of_kind(args.resources, group, kind_name)}
        for ns, r in sorted(injected_namespaces(args.resources).items()):
            if ns not in present:
                report(fix(f"inference namespace {ns} has no {kind_name}", hint), r.urn)

    return validate


inference_namespace_network_policy = StackValidationPolicy(
    name="inference-namespace-network-policy",
    description="Every inference namespace (istio-injection=enabled) has a NetworkPolicy.",
    enforcement_level=MANDATORY,
    validate=_namespace_has("networking.k8s.io", "NetworkPolicy",
                            "declare a NetworkPolicy admitting only the ingress gateway and monitoring namespaces"),
)

inference_namespace_authorization_policy = StackValidationPolicy(
    name="inference-namespace-authorization-policy",
    description="Every inference namespace (istio-injection=enabled) has an Istio AuthorizationPolicy.",
    enforcement_level=MANDATORY,
    validate=_namespace_has("security.istio.io", "AuthorizationPolicy",
                            "declare an AuthorizationPolicy allowing only the ingress gateway's principal"),
)


# --------------------------------------------------------------------------- (9) secret literals


def _secret_literals(args: ResourceValidationArgs, report) -> None:
    hint = "keep the value in a Kubernetes Secret built from a Pulumi secret and reference it " \
           "(secretKeyRef, envFrom, or the chart's existingSecret)"
    props = args.props
    if is_kind(args.resource_type, "ConfigMap"):
        data = get(props, "data", default={})
        for key in data:
            if secret_like(key) and literal(data[key]):
                report(fix(f"ConfigMap key {key!r} holds a literal secret", hint), None)
            for path in secret_literals(parse_document(data[key])):
                report(fix(f"ConfigMap key {key!r} holds a literal secret at {path}", hint), None)
    for pod in pod_specs(args.resource_type, props):
        for field, c in containers(pod):
            for env in items(get(c, "env")):
                if secret_like(get(env, "name", default="")) and literal(get(env, "value")):
                    report(fix(f"{_container_label(field, c)} env {get(env, 'name')} holds a literal secret", hint), None)
    if args.resource_type == HELM_RELEASE:
        for path in secret_literals(get(props, "values", default={})):
            report(fix(f"Helm values {path} holds a literal secret", hint), None)


no_secret_literals = ResourceValidationPolicy(
    name="no-secret-literals",
    description="No secret-looking literals (password, secret, token, apiKey, accessKey) in ConfigMaps, env values or Helm values.",
    enforcement_level=MANDATORY,
    validate=_secret_literals,
)


# --------------------------------------------------------------------------- (10) auth in production


def open_routes(vs_props: Mapping) -> list[str]:
    """HTTP routes of a VirtualService that forward requests without matching an Authorization header."""
    out = []
    for i, rule in enumerate(items(get(vs_props, "spec", "http"))):
        if not items(get(rule, "route")):
            continue  # directResponse / redirect: nothing reaches a backend
        matches = items(get(rule, "match"))
        if not matches or any(get(m, "headers", "authorization") is None for m in matches):
            out.append(f"http[{i}] ({get(rule, 'name', default='unnamed')})")
    return out


def _auth_in_production(args: StackValidationArgs, report) -> None:
    if not setting(args, "production"):
        return
    namespaces = injected_namespaces(args.resources)
    with_jwt = {namespace_of(r.props) for r in of_kind(args.resources, "security.istio.io", "RequestAuthentication")}
    for vs in of_kind(args.resources, "networking.istio.io", "VirtualService"):
        ns = namespace_of(vs.props)
        gateways = [g for g in items(get(vs.props, "spec", "gateways")) if g != "mesh"]
        if ns not in namespaces or not gateways or ns in with_jwt:
            continue
        routes = open_routes(vs.props)
        if routes:
            report(fix(
                f"VirtualService {ns}/{name_of(vs.props)} forwards {', '.join(routes)} without authentication "
                "in a production stack",
                "set the service's auth.mode to basic or jwt (auth 'none' is for non-production stacks only)",
            ), vs.urn)


no_open_auth_in_production = StackValidationPolicy(
    name="no-open-auth-in-production",
    description="Production inference routes authenticate: an Authorization header match or a RequestAuthentication.",
    enforcement_level=MANDATORY,
    validate=_auth_in_production,
    config_schema=schema("production"),
)


POLICIES = [
    pod_security_restricted,
    no_privileged_containers,
    images_pinned,
    no_loadbalancer_services,
    gateway_hosts_not_wildcard,
    mesh_mtls_strict,
    inference_namespace_network_policy,
    inference_namespace_authorization_policy,
    no_secret_literals,
    no_open_auth_in_production,
]

"""The stack's cross checks: what one part of the settings says about another (names, hosts,
namespaces, caches, OS, UIs, alerting, tuning). Plain functions of `Settings`, run by the loader.
"""

from __future__ import annotations

import os
from typing import Iterable, Optional, Union

from inference_platform.core import chart_source, driver_support
from inference_platform.core.endpoints import PLATFORM_NAMESPACES
from inference_platform.core.node_contract import capi_helm_sanitized
from inference_platform.settings.base import NAMESPACE
from inference_platform.settings.cluster import MAGNUM_RESERVED_ROLES, ClusterSettings, NodeGroup, cluster_problems
from inference_platform.settings.controller_clashes import stack_controller_name_problems
from inference_platform.settings.errors import KeyPath, how_to_set_secret
from inference_platform.settings.graphs import Graph, ensemble_repository_overlaps, graph_problems
from inference_platform.settings.identity import production_problems
from inference_platform.settings.mesh import MeshSettings, llm_gateway_annotation_problems
from inference_platform.settings.observability import AlertingSettings
from inference_platform.settings.serving import (
    Service,
    deployment_name,
    llm_basic_auth_reach_problems,
    pipeline_problems,
    service_problems,
)
from inference_platform.settings.stack import Settings
from inference_platform.settings.tuning import unknown_preset_problems
from inference_platform.settings.ui import UiSettings
from inference_platform.settings.weights import (
    MANILA_NEEDS_CIDRS,
    adopted_bucket_problems,
    loki_bucket_problems,
    needs_access_cidrs,
    upload_prefix_overlaps,
)

_TEMPLATE_OS: KeyPath = ("cluster", "magnum", "template", "os")


def _template_os(s: Settings) -> Optional[str]:
    """The OS of the Magnum template's image; None in mode existing, and for a templateId
    whose image template.os does not describe."""
    m = s.cluster.magnum
    if s.cluster.mode != "magnum" or (m.template_id is not None and "os" not in m.template.model_fields_set):
        return None
    return m.template.os


def _node_os(s: Settings, index: int, group: NodeGroup) -> tuple[Optional[str], KeyPath]:
    """The OS a group's nodes run and the key that says so (None where no key does)."""
    own: KeyPath = ("cluster", "nodeGroups", index, "os")
    if group.os is not None or group.image is not None or _template_os(s) is None:
        return group.os, own
    return _template_os(s), _TEMPLATE_OS


def _node_os_problems(s: Settings) -> list[tuple[KeyPath, str]]:
    """Each node OS against what the Magnum driver boots and, on GPU groups, against the
    driver mode of the GPU operator (the rules are data in driver_support)."""
    problems: dict[KeyPath, str] = {}  # groups that share the template's OS share one problem
    template_os = _template_os(s)
    labeller = s.cluster.magnum.node_labeller
    if template_os is not None:
        problem = driver_support.magnum_boot_problem(labeller, template_os)
        if problem:
            problems[_TEMPLATE_OS] = problem
    driver = s.gpu_operator.driver
    managed = s.gpu_operator.enabled and driver.mode != "preinstalled"
    for i, g in enumerate(s.cluster.node_groups):
        os_id, path = _node_os(s, i, g)
        if s.cluster.mode == "magnum" and g.os is not None:
            problem = driver_support.magnum_boot_problem(labeller, g.os) or (
                template_os and driver_support.magnum_group_problem(labeller, template_os, g.os, default_group=i == 0))
            if problem:
                problems.setdefault(path, problem)
                continue
        if not (g.is_gpu and managed) or path in problems:
            continue
        if os_id is None:
            why = ("mode existing" if s.cluster.mode == "existing" else "it sets its own image" if g.image
                   else "templateId is set without template.os")
            problems[path] = (f"required on GPU group {g.name!r} ({why}) while the GPU operator installs drivers "
                              f"(driver mode {driver.mode}): the OS of its nodes; allowed with {driver.mode}: "
                              f"{', '.join(driver_support.mode_oses(driver.mode))}")
            continue
        found = driver_support.driver_mode_problem(os_id, driver.mode, driver.branch)
        if found:
            key, message = found
            where = path if key == "os" else ("gpuOperator", "driver", "branch")
            problems.setdefault(where, f"GPU group {g.name!r} runs {os_id} with driver mode {driver.mode}: {message}")
        elif driver.mode == "precompiled" and s.cluster.mode == "magnum":
            image, where = _group_image(s, i, g)
            kernel = driver_support.precompiled_kernel_problem(os_id, image)
            if kernel:
                problems.setdefault(where, f"GPU group {g.name!r}: {kernel}")
    return list(problems.items())


def _group_image(s: Settings, i: int, g) -> tuple[str, KeyPath]:
    """The Glance image a Magnum group boots and its key: its own where the driver boots each
    group from its own image (driver_support.GROUP_IMAGES), else the template's."""
    if g.image and driver_support.GROUP_IMAGES[s.cluster.magnum.node_labeller]:
        return g.image, ("cluster", "nodeGroups", i, "image")
    return s.cluster.magnum.template.image, ("cluster", "magnum", "template", "image")


def _ui_problems(s: Settings) -> list[tuple[KeyPath, str]]:
    """UI hosts: served by the platform's gateway, with TLS (or plain HTTP opted into outside
    production), on hosts no service or graph serves; the OIDC client secret where Grafana needs it."""
    problems = grafana_secret_problems(s.ui, s.grafana_oidc_client_secret is not None, "grafanaOidcClientSecret",
                                       f"the secret {NAMESPACE}:grafanaOidcClientSecret; " + how_to_set_secret("grafanaOidcClientSecret"))
    # Every route's hosts: a UI host that a service or a graph also serves would be routed twice.
    route_hosts = {h: f"{kind}[{i}]" for kind, items in (("graphs", s.graphs), ("services", s.services))
                   for i, item in enumerate(items) for h in item.hosts}
    absent = {} if s.observability.enabled else {"grafana": "Grafana is not installed (observability.enabled: false); remove ui.grafana"}
    return problems + ui_gateway_problems(s.ui, s.mesh, s.production, route_hosts, absent)


def grafana_secret_problems(ui: UiSettings, given: bool, key: str, needed: str) -> list[tuple[KeyPath, str]]:
    """Grafana's OIDC client secret, at `key`, given exactly where `ui.grafana.auth` is oidc (the
    stack and Observability used alone); `needed`: what to give."""
    oidc = ui.grafana is not None and ui.grafana.auth == "oidc"
    if oidc and not given:
        return [((key,), f"ui.grafana.auth 'oidc' needs {needed}")]
    if not oidc and given:
        return [((key,), "applies to ui.grafana.auth 'oidc' only; remove the key")]
    return []


def ui_gateway_problems(ui: UiSettings, mesh: MeshSettings, production: bool, route_hosts: dict[str, str],
                        absent: Optional[dict[str, str]] = None) -> list[tuple[KeyPath, str]]:
    """What the gateway serving the UI hosts needs: the platform's mesh, TLS (or plain HTTP opted
    into outside production), hosts of their own (`route_hosts`: the hosts of the routes beside
    them -> who serves each); `absent`: UIs the stack does not install -> why. The stack and Mesh
    used alone both run it."""
    problems: list[tuple[KeyPath, str]] = []
    if production and ui.allow_plain_http:
        problems.append((("ui", "allowPlainHttp"), "plain HTTP UIs are not allowed in a production stack; allowed: false (set mesh.tls)"))
    seen: dict[str, str] = {}
    for name, host in ui.hosts.items():
        path: KeyPath = ("ui", name, "host")
        if not mesh.enabled:
            problems.append((path, "a UI host needs the platform's ingress gateway; allowed with mesh.enabled: true only"))
        elif name in (absent or {}):
            problems.append((path, absent[name]))
        elif not mesh.tls.enabled and (production or not ui.allow_plain_http):
            problems.append((path, "a UI login needs HTTPS: set mesh.tls.enabled and mesh.tls.secretName"
                             + ("" if production else ", or ui.allowPlainHttp: true (non-production stacks only)")))
        if host in route_hosts:
            problems.append((path, f"host {host!r} is already served by {route_hosts[host]}; "
                             "allowed: a host no service or graph serves"))
        elif host in seen:
            problems.append((path, f"host {host!r} is already ui.{seen[host]}.host"))
        seen.setdefault(host, name)
    return problems


ANONYMOUS_KIALI = "anonymous Kiali is not allowed in a production stack; allowed: token, openid"
EXPOSED_TOKEN_KIALI = ("a production stack that serves Kiali on ui.kiali.host logs in through its identity provider: "
                       "the token login takes a ServiceAccount token from the internet; allowed: openid (with "
                       "mesh.kialiOpenid), or token without ui.kiali (kubectl port-forward)")


def kiali_login_problems(production: bool, kiali_auth: str, served: bool) -> list[str]:
    """What a production stack refuses of Kiali's login: anonymous, and a token login on a host."""
    if not production:
        return []
    if kiali_auth == "anonymous":
        return [ANONYMOUS_KIALI]
    return [EXPOSED_TOKEN_KIALI] if kiali_auth == "token" and served else []


def node_group_problems(s: Settings) -> list[tuple[KeyPath, str]]:
    return cluster_node_group_problems(s.cluster)


def cluster_node_group_problems(c: ClusterSettings) -> list[tuple[KeyPath, str]]:
    """Node group names unique and not Magnum's own roles; extra Magnum groups have a flavor.
    The stack and Cluster used alone both run it."""
    problems: list[tuple[KeyPath, str]] = []
    seen: set[str] = set()
    # magnum-capi-helm names the chart's node group, and labels its nodes, with the sanitized
    # name (magnum_capi_helm/driver.py _process_node_groups at 1.4.0): `gpu--a` is `gpu-a` there.
    sanitized: dict[str, str] = {}
    capi_helm = c.magnum_labeller == "magnum-capi-helm"
    for i, g in enumerate(c.node_groups):
        if g.name in seen:
            problems.append((("cluster", "nodeGroups", i, "name"), f"duplicate node group name {g.name!r}; names must be unique"))
        elif capi_helm and capi_helm_sanitized(g.name) in sanitized:
            problems.append((("cluster", "nodeGroups", i, "name"),
                             f"{g.name!r} is {capi_helm_sanitized(g.name)!r} to magnum-capi-helm, like "
                             f"{sanitized[capi_helm_sanitized(g.name)]!r} (it makes each run of '-' one); names must differ after that"))
        seen.add(g.name)
        sanitized.setdefault(capi_helm_sanitized(g.name), g.name)
        if c.mode == "magnum" and i > 0 and g.name in MAGNUM_RESERVED_ROLES:
            problems.append((("cluster", "nodeGroups", i, "name"),
                             f"{g.name!r} is a role Magnum gives its own node groups; the platform's autoscaler "
                             f"discovers extra groups by role, so choose another name (not {', '.join(sorted(MAGNUM_RESERVED_ROLES))})"))
        if c.mode == "magnum" and i > 0 and g.flavor is None:
            problems.append((("cluster", "nodeGroups", i, "flavor"),
                             f"Magnum node group {g.name!r} needs a flavor (only the first group defaults to the template's)"))
    return problems


def cluster_settings_problems(s: Settings) -> list[tuple[KeyPath, str]]:
    return cluster_problems(s.cluster)


def capacity_problems(s: Settings) -> list[tuple[KeyPath, str]]:
    """Spare slots only on GPU groups; the GPU groups' reach within the quota."""
    problems: list[tuple[KeyPath, str]] = []
    groups = {g.name: g for g in s.cluster.node_groups}
    gpu_names = sorted(g.name for g in s.gpu_groups)
    for group, _ in s.cold_start.spare_slots.items():
        if group not in groups or not groups[group].is_gpu:
            problems.append((("coldStart", "spareSlots", group), f"no GPU node group named {group!r}; GPU groups: {', '.join(gpu_names) or 'none'}"))
    return problems + gpu_quota_problems(s.cluster)


def gpu_quota_problems(c: ClusterSettings) -> list[tuple[KeyPath, str]]:
    """The GPU groups' reach within the quota (the stack and Cluster used alone)."""
    if c.gpu_quota is None:
        return []
    total = sum(g.max_nodes * g.gpu.per_node for g in c.node_groups if g.is_gpu)
    if total <= c.gpu_quota:
        return []
    return [(("cluster", "gpuQuota"), f"GPU node groups can grow to {total} GPUs, over the quota of {c.gpu_quota}; lower maxNodes or raise gpuQuota")]


def platform_part_problems(s: Settings) -> list[tuple[KeyPath, str]]:
    """Kiali's login in production, Loki's bucket, the file share's access and the bucket's keys."""
    problems: list[tuple[KeyPath, str]] = []
    problems += [(("mesh", "kialiAuth"), why) for why in kiali_login_problems(s.production, s.mesh.kiali_auth, s.ui.kiali is not None)]
    if s.observability.loki_storage == "s3" and s.weight_caches.s3 is None:
        problems.append((("observability", "lokiStorage"), "lokiStorage 's3' needs weightCaches.s3 (its endpoint and credentials)"))
    if s.observability.loki_storage == "s3" and s.weight_caches.s3 is not None:
        problems += [(("weightCaches", "s3", "bucket"), why) for why in loki_bucket_problems(s.weight_caches.s3)]
    if s.cluster.mode == "existing" and needs_access_cidrs(s.weight_caches, None):
        problems.append((("weightCaches", "fileShare", "accessCidrs"), MANILA_NEEDS_CIDRS))
    problems += adopted_bucket_problems(s.weight_caches)
    if s.weight_caches.s3 is not None:
        for key, value in (("s3AccessKeyId", s.s3_access_key_id), ("s3SecretAccessKey", s.s3_secret_access_key)):
            if value is None:
                problems.append(((key,), f"weightCaches.s3 needs the secret {NAMESPACE}:{key}; {how_to_set_secret(key)}"))
    return problems


def _served(s: Settings) -> list[tuple[str, int, Union[Service, Graph]]]:
    """(section, index, item) of every service and graph of the stack."""
    return [("services", i, svc) for i, svc in enumerate(s.services)] + [("graphs", i, g) for i, g in enumerate(s.graphs)]


def served_problems(s: Settings) -> list[tuple[KeyPath, str]]:
    """Services and graphs: unique names and hosts, namespaces of their own, auth in production,
    each one's own checks, and the weight caches their repositories name."""
    problems: list[tuple[KeyPath, str]] = []
    groups = {g.name: g for g in s.cluster.node_groups}
    names: dict[str, str] = {}
    hosts: dict[str, str] = {}
    caches = {"fileShare": s.weight_caches.file_share, "s3": s.weight_caches.s3}
    configured = ", ".join(k for k, c in caches.items() if c) or "none"
    for kind, i, item in _served(s):
        base: KeyPath = (kind, i)
        where = f"{kind}[{i}]"
        if item.name in names:
            problems.append((base + ("name",), f"name {item.name!r} is already used by {names[item.name]}; "
                             "service and graph names must be unique"))
        names.setdefault(item.name, where)
        for hi, host in enumerate(item.hosts):
            if host in hosts and hosts[host] != where:
                problems.append((base + ("hosts", hi), f"host {host!r} is already served by {hosts[host]}"))
            hosts.setdefault(host, where)
        problems += [(base + path, why) for path, why in reserved_namespace_problems(item)]
        problems += [(base + path, why) for path, why in production_auth_problems(item, s.production)]
        if kind == "services":
            problems += [(base + path, problem) for path, problem in service_problems(item, groups)]
            repositories = [(("versions", vi), v.model_repository) for vi, v in enumerate(item.versions)]
        else:
            problems += [(base + path, problem) for path, problem in graph_problems(item, groups)]
            repositories = [(("steps", si), step.model_repository) for si, step in enumerate(item.steps)]
        for path, repo in repositories:
            if caches[repo.cache] is None:
                problems.append((base + path + ("modelRepository", "cache"),
                                 f"weight cache {repo.cache!r} is not configured under weightCaches; configured: {configured}"))
    return problems


def production_auth_problems(item: Union[Service, Graph], production: bool) -> list[tuple[KeyPath, str]]:
    """What a production stack requires of a service's or graph's auth (paths relative to it: the
    stack and TritonService or InferenceGraph used alone, given `production`)."""
    if not production:
        return []
    if item.auth.mode == "none":
        return [(("auth", "mode"), "auth mode 'none' is not allowed in a production stack; allowed: basic, jwt")]
    if item.auth.mode == "jwt" and not item.auth.jwt.audiences:
        return [(("auth", "jwt", "audiences"), "required in a production stack: without it the gateway accepts any "
                 "token its issuer signs, for any audience; allowed: the `aud` values of the tokens meant for this service")]
    return []


def reserved_namespace_problems(item: Union[Service, Graph]) -> list[tuple[KeyPath, str]]:
    """A service or graph keeps out of Kubernetes' and the platform's namespaces (paths relative
    to it: the stack and TritonService or InferenceGraph used alone)."""
    namespace = item.k8s_namespace
    if namespace not in PLATFORM_NAMESPACES and namespace != "default" and not namespace.startswith("kube-"):
        return []
    key = "namespace" if item.namespace else "name"
    return [((key,), f"namespace {namespace!r} is reserved; not allowed: default, kube-*, "
             f"{', '.join(sorted(PLATFORM_NAMESPACES - {'kube-system'}))}"
             + ("" if item.namespace else " (set namespace to place it elsewhere)"))]


def alerting_problems(s: Settings) -> list[tuple[KeyPath, str]]:
    """Receiver names unique, every routed name a receiver, every receiver with its secret and no other secrets."""
    a = s.observability.alerting
    problems: list[tuple[KeyPath, str]] = [
        (("observability", "alerting", "receivers", i), f"receiver {r.name!r} needs its {r.kind} credential in the secret "
         f"{NAMESPACE}:alertReceiverSecrets.{r.name}; {how_to_set_secret('alertReceiverSecrets', r.name)}")
        for i, r in enumerate(a.receivers) if r.name not in s.alert_receiver_secrets]
    return alert_routing_problems(a, s.alert_receiver_secrets) + problems


def alert_routing_problems(a: AlertingSettings, secrets: Iterable[str]) -> list[tuple[KeyPath, str]]:
    """Receiver names unique and not `null`, every routed name a receiver, no secret without one
    (`secrets`: the names alertReceiverSecrets holds). The stack and Observability used alone
    both run it; each says in its own words where a missing secret goes."""
    problems: list[tuple[KeyPath, str]] = []
    base: KeyPath = ("observability", "alerting")
    seen: set[str] = set()
    for i, r in enumerate(a.receivers):
        if r.name in seen:
            problems.append((base + ("receivers", i, "name"), f"duplicate receiver name {r.name!r}"))
        seen.add(r.name)
        if r.name == "null":
            problems.append((base + ("receivers", i, "name"), "'null' is Alertmanager's receiver that drops alerts; pick another name"))
    for severity in ("critical", "warning"):
        for i, name in enumerate(getattr(a, severity)):
            if name not in seen:
                problems.append((base + (severity, i), f"no receiver named {name!r}; receivers: {', '.join(sorted(seen)) or 'none'}"))
    for name in sorted(set(secrets) - seen):
        problems.append((("alertReceiverSecrets", name), f"no receiver named {name!r} under observability.alerting.receivers; "
                         f"receivers: {', '.join(sorted(seen)) or 'none'}"))
    return problems


def tuning_problems(s: Settings) -> list[tuple[KeyPath, str]]:
    """Presets the uploads name exist; a service pipeline has Argo installed and a base version."""
    problems: list[tuple[KeyPath, str]] = []
    if s.weight_caches.s3 is not None:
        problems += [(("weightCaches", *path), why) for path, why in unknown_preset_problems(s.weight_caches.s3, s.tuning_presets)]
    for si, svc in enumerate(s.services):
        if svc.pipeline is None:
            continue
        if not s.model_pipeline.enabled:
            problems.append((("services", si, "pipeline"), "needs modelPipeline.enabled: true (Argo Workflows runs the pipeline)"))
        problems += [(("services", si, *path), why) for path, why in pipeline_problems(svc)]
    return problems


def upload_prefix_problems(s: Settings) -> list[tuple[KeyPath, str]]:
    return upload_prefix_overlaps(s.weight_caches)


def llm_basic_auth_problems(s: Settings) -> list[tuple[KeyPath, str]]:
    """Basic Auth on an LLM service needs the platform's mesh: its gateway's filter and the policy
    that fails closed live in Istio's root namespace (mesh/basic_auth.py), which reaches the
    service's own Gateway only from there; a cluster's own Istio has its gateway elsewhere.
    TritonService used alone runs the same check on its mesh (serving/inputs.py)."""
    return [(("services", i, *path), why) for i, svc in enumerate(s.services)
            for path, why in llm_basic_auth_reach_problems(svc, s.mesh.enabled, "mesh.enabled")]


# What a client of each auth mode sends on every request, readable by anyone on the path over plain HTTP.
SENT_CREDENTIAL = {"basic": "its Basic credential (a reusable password)", "jwt": "its bearer token"}


def _credentialed(s: Settings) -> list[tuple[str, int, str, str]]:
    """(section, index, name, mode) of every service and graph whose clients send a credential."""
    return [(section, i, item.name, item.auth.mode) for section, i, item in _served(s) if item.auth.mode in SENT_CREDENTIAL]


def credentials_in_clear_problems(s: Settings) -> list[tuple[KeyPath, str]]:
    """A production stack serves no credential over plain HTTP: with `mesh.tls` off the gateway has
    only its port 80 server, so every request of a `basic` or `jwt` service or graph carries its
    credential in clear (only UI logins were held to HTTPS before, _ui_problems). Other stacks get
    a warning line instead (credentials_in_clear_warnings) unless `mesh.allowPlainHttpCredentials`
    says so; with TLS on, port 80 redirects to HTTPS (mesh/mesh.py gateway servers)."""
    if not s.production:
        return []
    return plain_http_credentials_opt_in_problems(s.mesh, s.production) + [
        ((section, i, *path), why) for section, i, item in _served(s)
        for path, why in credential_in_clear_problems(item, s.production, s.mesh.tls.enabled,
                                                      "mesh.tls.enabled with mesh.tls.secretName")]


def credential_in_clear_problems(item: Union[Service, Graph], production: bool, tls: bool,
                                 allowed: str) -> list[tuple[KeyPath, str]]:
    """A production `basic` or `jwt` service or graph needs a gateway serving HTTPS (`tls`), or
    every request carries its credential in clear; `allowed` says what turns it on (paths relative
    to the item: the stack and TritonService or InferenceGraph used alone, given `production`)."""
    mode = item.auth.mode
    if not production or tls or mode not in SENT_CREDENTIAL:
        return []
    return [(("auth", "mode"), f"{mode}: without mesh.tls every request would send {SENT_CREDENTIAL[mode]} over "
             f"plain HTTP, not allowed in a production stack; allowed: {allowed}")]


def plain_http_credentials_opt_in_problems(mesh: MeshSettings, production: bool) -> list[tuple[KeyPath, str]]:
    """`mesh.allowPlainHttpCredentials` is refused in production (the stack and Mesh used alone)."""
    if not (production and mesh.allow_plain_http_credentials):
        return []
    return [(("mesh", "allowPlainHttpCredentials"), "credentials over plain HTTP are not allowed in a production "
             "stack; allowed: false (set mesh.tls)")]


def credentials_in_clear_warnings(s: Settings) -> list[str]:
    """The plan's warning for each `basic` or `jwt` service or graph of a non-production stack
    without `mesh.tls`: it plans, but its credentials cross the network in clear. None where the
    stack opts in with `mesh.allowPlainHttpCredentials: true`."""
    if s.production or s.mesh.tls.enabled or s.mesh.allow_plain_http_credentials:
        return []
    return [f"{section}[{name}].auth.mode: {mode} without mesh.tls: every request sends {SENT_CREDENTIAL[mode]} over "
            "plain HTTP (refused in a production stack); set mesh.tls.enabled and mesh.tls.secretName, or "
            "mesh.allowPlainHttpCredentials: true to accept it"
            for section, _, name, mode in _credentialed(s)]


def deployment_name_clashes(s: Settings) -> list[tuple[KeyPath, str]]:
    """(key path, problem) for versions whose Deployment name another service's version
    already takes in the same namespace (`a-b` + `c` and `a` + `b-c` are both `a-b-c`)."""
    seen: dict[tuple[str, str], str] = {}
    problems = []
    for i, svc in enumerate(s.services):
        for j, version in enumerate(svc.versions):
            key = (svc.k8s_namespace, deployment_name(svc, version))
            if key in seen:
                problems.append((("services", i, "versions", j, "name"),
                                 f"Deployment name {key[1]!r} in namespace {key[0]!r} is already {seen[key]}'s; "
                                 "allowed: service and version names whose `<service>-<version>` is unique per namespace"))
            else:
                seen[key] = f"{svc.name}/{version.name}"
    return problems


def derived_name_clashes(s: Settings) -> list[tuple[KeyPath, str]]:
    """Service and graph names that another service's derived objects already take: a tuned
    service `x` names its tuning NetworkPolicy `x-tuning` (resource `x-tuning-networkpolicy`, the
    same URN as service `x-tuning`'s own NetworkPolicy, whatever its namespace); a service with a
    pipeline names its WorkflowTemplate, ServiceAccount, Role and NetworkPolicy `x-pipeline` in its
    namespace. Refused here, before two resources fight over one object in `pulumi up`."""
    taken: dict[str, tuple[int, str, str, bool]] = {}  # name -> (owner, what, its namespace, one URN)
    for i, svc in enumerate(s.services):
        if any(v.tuning is not None for v in svc.versions):
            taken[f"{svc.name}-tuning"] = (i, "tuning NetworkPolicy", svc.k8s_namespace, True)
        if svc.pipeline is not None:
            taken[f"{svc.name}-pipeline"] = (i, "pipeline objects", svc.k8s_namespace, False)
    problems: list[tuple[KeyPath, str]] = []
    for kind, items in (("services", s.services), ("graphs", s.graphs)):
        for i, item in enumerate(items):
            if item.name not in taken:
                continue
            owner, what, namespace, same_urn = taken[item.name]
            if item.k8s_namespace == namespace or (same_urn and kind == "services"):
                problems.append(((kind, i, "name"), f"{item.name!r} is the name of services[{owner}]'s {what} "
                                 f"(namespace {namespace!r}); allowed: a name other than `<service>-tuning` of a "
                                 "tuned service and `<service>-pipeline` of a service with a pipeline"))
    return problems


def llm_gateway_annotations_problems(s: Settings) -> list[tuple[KeyPath, str]]:
    """mesh.gatewayAnnotations as the Gateway of each LLM service passes them on."""
    if not any(svc.llm_routed for svc in s.services):
        return []
    return llm_gateway_annotation_problems(s.mesh.gateway_annotations, ("mesh", "gatewayAnnotations"))


def graph_repository_problems(s: Settings) -> list[tuple[KeyPath, str]]:
    """Graph step repositories that an ensemble's Triton would load as models."""
    return ensemble_repository_overlaps(s.graphs)


def chart_directory_override_problems(s: Settings) -> list[tuple[KeyPath, str]]:
    """The environment's chart directory, which overrides `chartDirectory`, must serve every pinned chart."""
    override = os.environ.get(chart_source.ENVIRONMENT_VARIABLE)
    problem = override and chart_source.directory_problem(override, f"${chart_source.ENVIRONMENT_VARIABLE}")
    return [(("chartDirectory",), problem)] if problem else []


# What one part of the settings says about another, in the order the problems are reported.
CROSS_CHECKS = (
    production_problems, node_group_problems, cluster_settings_problems, _node_os_problems, capacity_problems, platform_part_problems,
    _ui_problems, credentials_in_clear_problems, alerting_problems, tuning_problems, served_problems, derived_name_clashes,
    stack_controller_name_problems, llm_gateway_annotations_problems, upload_prefix_problems,
    graph_repository_problems, chart_directory_override_problems,
)


def cross_checks(s: Settings) -> list[tuple[KeyPath, str]]:
    """Every cross check's problems; plain function, testable alone."""
    return [problem for check in CROSS_CHECKS for problem in check(s)]

"""Conventions every component shares: resource options, standard labels, the restricted
security context, NetworkPolicy pieces, namespaces and Helm releases."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.core import chart_source
from inference_platform.core.aliases import component_aliases
from inference_platform.core.chart_hardening import hardened
from inference_platform.core.versions import Chart

PART_OF = "inference-platform"
# pulumi-kubernetes then applies the object without waiting for it to become ready:
# for workloads whose pods stay Pending by design.
SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}


def component_type(type_name: str) -> str:
    """The type token of one of our components, as the component plugin publishes it."""
    return f"{PART_OF}:index:{type_name}"


def init_component(component: pulumi.ComponentResource, type_name: str, name: str,
                   opts: Optional[pulumi.ResourceOptions]) -> None:
    """Register `component` under its published type token, aliased to every token it had
    before (core/aliases.py), and keep the parts it was told to wait for (`dependsOn`): every
    child waits for them too (and inherits the aliases)."""
    aliased = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(aliases=component_aliases(type_name)))
    pulumi.ComponentResource.__init__(component, component_type(type_name), name, None, aliased)
    deps = opts.depends_on if opts is not None else None
    component._after = [deps] if isinstance(deps, pulumi.Resource) else list(deps or ())


def resource_opts(
    parent: pulumi.Resource,
    *,
    provider: Optional[pulumi.ProviderResource] = None,
    protect: bool = False,
    retain_on_delete: bool = False,
    depends_on: Sequence[pulumi.Resource] = (),
) -> pulumi.ResourceOptions:
    """Options of a child resource: parented to its component (whose providers it inherits,
    unless one is given), after what the component waits for and `depends_on`."""
    after = [*getattr(parent, "_after", ()), *depends_on]
    return pulumi.ResourceOptions(
        parent=parent,
        provider=provider,
        protect=protect,
        retain_on_delete=retain_on_delete,
        depends_on=list(dict.fromkeys(after)) or None,
    )


def restricted_security_context(**user: int) -> dict[str, Any]:
    """A container's Pod Security "restricted" context: non-root, no privilege escalation, no
    capabilities, the runtime's seccomp profile, a read-only root filesystem; `user` adds the
    image's user (runAsUser, runAsGroup)."""
    return {"runAsNonRoot": True, **user, "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True, "seccompProfile": {"type": "RuntimeDefault"}}


# The disk-backed emptyDirs istiod's injector adds to every injected pod (istio 1.30.3
# manifests/charts/istio-control/istio-discovery/files/injection-template.yaml, volumes; its
# istio-envoy is medium Memory and istio-podinfo a downwardAPI volume, neither local storage).
ISTIO_INJECTED_DISK_VOLUMES = ("workload-socket", "credential-socket", "workload-certs", "istio-data")
# cluster-autoscaler utils/drain/drain.go (1.34.5, isLocalVolume, HasBlockingLocalStorage): a pod
# with an emptyDir that is not medium Memory blocks its node's scale-down (skip-nodes-with-local-storage,
# true by default and on magnum-cluster-api) unless this annotation names the volume.
SAFE_TO_EVICT_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"


def scale_down_annotations(volumes: Sequence[dict], added: Sequence[str] = ()) -> dict[str, str]:
    """The pod-template annotation that lets the cluster autoscaler take an idle node from under
    an injected pod whose emptyDirs hold only scratch a new pod rebuilds: it names the disk-backed
    emptyDirs of `volumes` (the template's), those a controller adds (`added`) and the sidecar
    injector's."""
    disk = [v["name"] for v in volumes if "emptyDir" in v and (v["emptyDir"] or {}).get("medium") != "Memory"]
    return {SAFE_TO_EVICT_LOCAL_VOLUMES: ",".join(dict.fromkeys([*disk, *added, *ISTIO_INJECTED_DISK_VOLUMES]))}


def standard_labels(name: str, **extra: str) -> dict[str, str]:
    """The labels every Kubernetes object of the platform carries."""
    return {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/part-of": PART_OF,
        "app.kubernetes.io/managed-by": "pulumi",
        **extra,
    }


COMPONENT_KEY = "app.kubernetes.io/component"


def deny_all_traffic_spec(component: str) -> dict[str, Any]:
    """A NetworkPolicy spec that lets no traffic in or out of the platform's pods labelled with
    `component`, and selects nothing else in their namespace (the charts' pods stay untouched)."""
    return {"podSelector": {"matchLabels": {"app.kubernetes.io/part-of": PART_OF, COMPONENT_KEY: component}},
            "policyTypes": ["Ingress", "Egress"]}


def from_namespace(namespace: str) -> list[dict]:
    """A NetworkPolicy peer: every pod of `namespace`."""
    return [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}]


def from_pods(namespace: str, labels: dict[str, str]) -> dict:
    """A NetworkPolicy peer: the pods of `namespace` that carry `labels`."""
    return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            "podSelector": {"matchLabels": dict(labels)}}


def ingress_only_spec(selector: dict[str, str], rules: list[tuple[int, list[dict]]]) -> dict[str, Any]:
    """A NetworkPolicy spec that admits to the pods with `selector` only each rule's TCP port
    from its peers (no rule: nothing), and leaves their egress open."""
    return {"podSelector": {"matchLabels": dict(selector)}, "policyTypes": ["Ingress"],
            "ingress": [{"from": peers, "ports": [{"protocol": "TCP", "port": port}]} for port, peers in rules]}



def namespace(
    logical_name: str,
    name: str,
    opts: pulumi.ResourceOptions,
    *,
    app: Optional[str] = None,
    pod_security: Optional[str] = None,
    labels: Optional[dict[str, str]] = None,
) -> k8s.core.v1.Namespace:
    """A namespace with the standard labels and, when given, an enforced Pod Security level."""
    extra = dict(labels or {})
    if pod_security:
        extra["pod-security.kubernetes.io/enforce"] = pod_security
    return k8s.core.v1.Namespace(
        logical_name, metadata={"name": name, "labels": standard_labels(app or name, **extra)}, opts=opts
    )


def descendants(resource: pulumi.Resource) -> Iterator[pulumi.Resource]:
    """Every resource registered under `resource`, children first-level down: the SDK's own record of
    a resource's children (pulumi/resource.py `_childResources`, what `depends_on` a component
    expands to). Complete once the constructors that register them have returned."""
    for child in list(getattr(resource, "_childResources", ())):
        yield child
        yield from descendants(child)


def helm_release(
    logical_name: str,
    release_name: str,
    chart: Chart,
    namespace_name: str,
    values: dict,
    opts: pulumi.ResourceOptions,
    timeout_seconds: Optional[int] = None,
) -> k8s.helm.v3.Release:
    """A Helm release of a pinned chart (versions.py) under a fixed release name, its values
    over what the chart lets us harden (core/chart_hardening.py).

    `timeout_seconds` is how long Helm waits for the release's workloads (default 300);
    readiness.release_timeout gives it for charts whose pods wait for new nodes.
    """
    chart_ref, repository = chart_source.release_chart(chart)
    return k8s.helm.v3.Release(
        logical_name,
        name=release_name,
        chart=chart_ref,
        version=chart.version,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=repository) if repository else None,
        namespace=namespace_name,
        values=hardened(chart.name, values),
        timeout=timeout_seconds,
        opts=opts,
    )


# Aggregated ClusterRoles that a chart renders beside the roles they gather.
#
# Aggregated ClusterRoles that a chart renders beside the roles they gather.
#
# kube-controller-manager's clusterrole-aggregation controller keeps an aggregated role's rules equal
# to the union of the roles its `aggregationRule` selects. It reads the aggregated role from its
# informer cache and server-side applies the new rules (kubernetes v1.34.4
# pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go: syncClusterRole lists
# from clusterRoleLister, applyClusterRoles sends an Apply with Force). When Helm uninstalls a release
# it deletes the aggregated role and the roles it selects at once; the selected roles going change
# the union, the controller applies it to the role it still has cached, and the apply re-creates the
# deleted role. Helm's uninstall then waits for an object that keeps coming back, and pulumi-kubernetes
# waits on every uninstall of a release without skipAwait (provider/pkg/provider/helm_release.go
# Delete): `pulumi destroy` ends in "context deadline exceeded" and leaves the roles behind.
#
# So the platform points such a role's selector at a label no role carries: the union is empty from
# the start and stays empty while the release goes, and the controller has nothing to apply. The role
# still exists and grants nothing (the platform binds none of them). The patch is kept on delete:
# dropping it would hand the selector back to the chart's value in the middle of the uninstall.

# No object carries this label: a selector on it matches nothing.
NEVER_AGGREGATED = {"inference-platform/aggregated-by": "nothing"}
# pulumi-kubernetes: a Patch takes the fields it sets from their current manager (Helm) instead of
# failing on the conflict.
PATCH_FORCE = {"pulumi.com/patchForce": "true"}


def aggregation_stopped(parent: pulumi.Resource, release: pulumi.Resource, role_names: Sequence[str], *,
                        name: str, provider: Optional[pulumi.ProviderResource] = None) -> list[pulumi.Resource]:
    """One ClusterRolePatch per aggregated role of `release` named in `role_names`, after the release:
    its selector matches nothing, so uninstalling the release never re-creates it."""
    return [k8s.rbac.v1.ClusterRolePatch(
        f"{name}-{role}-aggregation",
        metadata=k8s.meta.v1.ObjectMetaPatchArgs(name=role, annotations=PATCH_FORCE),
        aggregation_rule=k8s.rbac.v1.AggregationRulePatchArgs(
            cluster_role_selectors=[k8s.meta.v1.LabelSelectorPatchArgs(match_labels=NEVER_AGGREGATED)]),
        opts=resource_opts(parent, provider=provider, depends_on=[release], retain_on_delete=True),
    ) for role in role_names]


def with_node_selector(values: dict[str, Any], selector: dict[str, str], *paths: str) -> dict[str, Any]:
    """`values` with each dotted key path (a chart's `nodeSelector` keys) set to `selector`;
    unchanged when the selector is empty (the pods may run on any node)."""
    if selector:
        for path in paths:
            *parents, key = path.split(".")
            node = values
            for parent in parents:
                node = node.setdefault(parent, {})
            node[key] = dict(selector)
    return values


def shipped_dir(name: str) -> Path:
    """A folder the package ships as data (dashboards, graph_app, model_tools): inside the
    installed package (a wheel), else beside the package's source folder (a checkout)."""
    package = Path(__file__).resolve().parent.parent
    installed = package / name
    return installed if installed.is_dir() else package.parent / name

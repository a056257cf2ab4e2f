"""Correctness policies: mesh wiring, traffic splits, autoscaling targets, GPU scheduling,
Triton probes and CRD ordering."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Optional

from pulumi_policy import (
    EnforcementLevel,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from inference_platform.core.chart_source import chart_name_of

from .kube import (
    GPU_TAINT_KEY,
    HELM_RELEASE,
    INJECTION_LABEL,
    api_group,
    containers,
    declared,
    fix,
    get,
    gpu_resources,
    is_kind,
    items,
    kind,
    labels_of,
    name_of,
    namespace_of,
    pod_specs,
    runs_tritonserver,
    schema,
    setting,
)
from .security import of_kind

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY


# --------------------------------------------------------------------------- (11) sidecar injection


def _injection(args: StackValidationArgs, report) -> None:
    namespaces = {name_of(r.props): r for r in args.resources if is_kind(r.resource_type, "Namespace")}
    for r in args.resources:
        if not any(runs_tritonserver(c) for pod in pod_specs(r.resource_type, r.props) for _, c in containers(pod)):
            continue
        ns = namespace_of(r.props)
        declared = namespaces.get(ns)
        if declared is None:
            report(fix(f"Triton workload runs in namespace {ns}, which the stack does not declare",
                       "name the namespace in the stack file's services[].namespace (the platform declares it with istio-injection=enabled)"), r.urn)
        elif get(labels_of(declared.props), INJECTION_LABEL) != "enabled":
            report(fix(f"namespace {ns} holds Triton workloads but lacks istio-injection=enabled",
                       "label the namespace istio-injection=enabled so Triton pods get the mesh sidecar"), declared.urn)


inference_namespace_injection = StackValidationPolicy(
    name="inference-namespace-injection",
    description="Namespaces holding Triton workloads are declared with istio-injection=enabled.",
    enforcement_level=MANDATORY,
    validate=_injection,
)


# --------------------------------------------------------------------------- (12) weights

_PROTOCOLS = ("http", "tcp", "tls")


def weight_problems(vs_props: Mapping) -> list[str]:
    """Route rules whose destination weights do not sum to 100."""
    out = []
    for proto in _PROTOCOLS:
        for i, rule in enumerate(items(get(vs_props, "spec", proto))):
            routes = items(get(rule, "route"))
            if not routes or (len(routes) == 1 and get(routes[0], "weight") is None):
                continue  # a single destination takes all traffic
            weights = [get(r, "weight", default=0) for r in routes]
            total = sum(int(w) for w in weights if isinstance(w, (int, float)))
            if total != 100:
                out.append(f"{proto}[{i}] ({get(rule, 'name', default='unnamed')}) weights "
                           f"{' + '.join(str(w) for w in weights)} = {total}")
    return out


def _weights(args: ResourceValidationArgs, report) -> None:
    if api_group(args.resource_type) != "networking.istio.io" or not is_kind(args.resource_type, "VirtualService"):
        return
    for problem in weight_problems(args.props):
        report(fix(f"route {problem}, not 100",
                   "make the service's version weights sum to 100 (weight 0 keeps a version deployed without traffic)"), None)


virtualservice_weights_sum = ResourceValidationPolicy(
    name="virtualservice-weights-sum",
    description="Every VirtualService route rule's destination weights sum to 100.",
    enforcement_level=MANDATORY,
    validate=_weights,
)


# --------------------------------------------------------------------------- (13) subsets


def full_host(host: str, namespace: str) -> str:
    """Istio's reading of a host: short names are relative to the rule's namespace."""
    parts = host.split(".")
    if len(parts) == 1:
        return f"{host}.{namespace}.svc.cluster.local"
    if len(parts) == 2:
        return f"{host}.svc.cluster.local"
    if host.endswith(".svc"):
        return f"{host}.cluster.local"
    return host


def destinations(vs_props: Mapping) -> list[tuple[str, Mapping]]:
    """(where, destination) of every route destination and mirror of a VirtualService."""
    out = []
    for proto in _PROTOCOLS:
        for i, rule in enumerate(items(get(vs_props, "spec", proto))):
            where = f"{proto}[{i}]"
            out += [(f"{where}.route[{j}]", get(r, "destination", default={})) for j, r in enumerate(items(get(rule, "route")))]
            if isinstance(get(rule, "mirror"), Mapping):
                out.append((f"{where}.mirror", get(rule, "mirror")))
            out += [(f"{where}.mirrors[{j}]", get(m, "destination", default={})) for j, m in enumerate(items(get(rule, "mirrors")))]
    return out


def _subsets(args: StackValidationArgs, report) -> None:
    subsets: dict[str, set[str]] = {}
    for dr in of_kind(args.resources, "networking.istio.io", "DestinationRule"):
        host = full_host(str(get(dr.props, "spec", "host", default="")), namespace_of(dr.props))
        subsets.setdefault(host, set()).update(str(get(s, "name")) for s in items(get(dr.props, "spec", "subsets")))
    for vs in of_kind(args.resources, "networking.istio.io", "VirtualService"):
        ns = namespace_of(vs.props)
        for where, dest in destinations(vs.props):
            subset = get(dest, "subset")
            if subset is None:
                continue
            host = full_host(str(get(dest, "host", default="")), ns)
            if host not in subsets:
                report(fix(f"{where} names subset {subset!r} of {host}, which no DestinationRule defines",
                           "declare a DestinationRule for the host with one subset per version"), vs.urn)
            elif subset not in subsets[host]:
                report(fix(f"{where} names subset {subset!r}, but the DestinationRule for {host} has only "
                           f"{', '.join(sorted(subsets[host])) or 'no subsets'}",
                           "route only to deployed versions (services[].versions / mirror.version)"), vs.urn)


virtualservice_subsets_exist = StackValidationPolicy(
    name="virtualservice-subsets-exist",
    description="Every subset a VirtualService route or mirror names exists in the DestinationRule for its host.",
    enforcement_level=MANDATORY,
    validate=_subsets,
)


# --------------------------------------------------------------------------- (14) HPA targets

# Pulumi auto-names an object `<logical name>-<random hex>` (the offline plan: 7 hex digits).
_AUTO_SUFFIX = r"-[0-9a-f]{7,8}$"


def hpa_target(hpa, resources: list) -> Optional[Any]:
    """The workload an HPA scales: same kind and namespace, matching its rendered name."""
    ref = get(hpa.props, "spec", "scaleTargetRef", default={})
    want_kind, want_name, ns = get(ref, "kind"), get(ref, "name"), namespace_of(hpa.props)
    candidates = [r for r in resources if kind(r.resource_type) == want_kind and namespace_of(r.props) == ns]
    for r in candidates:
        if name_of(r.props) == want_name:
            return r
    # No rendered name recorded: an auto-named dependency whose logical name fits the pattern.
    deps = {d.urn for d in hpa.dependencies}
    for r in candidates:
        if r.urn in deps and name_of(r.props) is None and re.match(re.escape(r.name) + _AUTO_SUFFIX, str(want_name)):
            return r
    return None


def _hpa_exists(args: StackValidationArgs, report) -> None:
    for hpa in args.resources:
        if not is_kind(hpa.resource_type, "HorizontalPodAutoscaler"):
            continue
        if hpa_target(hpa, args.resources) is None:
            ref = get(hpa.props, "spec", "scaleTargetRef", default={})
            report(fix(f"HPA {namespace_of(hpa.props)}/{name_of(hpa.props) or hpa.name} scales {get(ref, 'kind')} "
                       f"{get(ref, 'name')!r}, which the stack does not declare in that namespace",
                       "give the Deployment a fixed metadata.name and point scaleTargetRef.name at it "
                       "(an output name would make the HPA wait for the rollout)"), hpa.urn)


def _hpa_no_replicas(args: StackValidationArgs, report) -> None:
    for hpa in args.resources:
        if not is_kind(hpa.resource_type, "HorizontalPodAutoscaler"):
            continue
        target = hpa_target(hpa, args.resources)
        replicas = None if target is None else declared(target.props, "spec", "replicas")
        if replicas is not None:
            report(fix(f"{kind(target.resource_type)} {target.name} sets spec.replicas "
                       f"({replicas}) although HPA {hpa.name} scales it",
                       "leave replicas unset on autoscaled workloads, or every update resets the HPA's count"), target.urn)


hpa_target_exists = StackValidationPolicy(
    name="hpa-target-exists",
    description="Every HorizontalPodAutoscaler's scaleTargetRef names a workload declared in the stack.",
    enforcement_level=MANDATORY,
    validate=_hpa_exists,
)

hpa_target_sets_no_replicas = StackValidationPolicy(
    name="hpa-target-sets-no-replicas",
    description="A workload scaled by an HPA sets no spec.replicas.",
    # The count fights the HPA on every update rather than breaking anything: advisory.
    enforcement_level=ADVISORY,
    validate=_hpa_no_replicas,
)


# --------------------------------------------------------------------------- (15) GPU requests

_WHOLE = re.compile(r"^[1-9][0-9]*$")


def gpu_quantity_problems(container: Mapping) -> list[str]:
    out = []
    for res, (request, limit) in gpu_resources(container).items():
        if limit is None:
            out.append(f"{res} is requested ({request}) without a limit")
            continue
        if request is not None and str(request) != str(limit):
            out.append(f"{res} request {request} differs from limit {limit}")
        if not _WHOLE.match(str(limit)):
            out.append(f"{res} limit {limit} is not a whole number")
    return out


def _gpu_quantities(args: ResourceValidationArgs, report) -> None:
    for c in (c for pod in pod_specs(args.resource_type, args.props) for _, c in containers(pod)):
        for problem in gpu_quantity_problems(c):
            report(fix(f"container {get(c, 'name')!r}: {problem}",
                       "set GPU limits to a whole count and requests equal to them: give the service a GPU group from the stack file's cluster.nodeGroups instead of hand-written resources"), None)


gpu_requests_equal_limits = ResourceValidationPolicy(
    name="gpu-requests-equal-limits",
    description="GPU resource requests equal their limits and are whole numbers.",
    enforcement_level=MANDATORY,
    validate=_gpu_quantities,
)


# --------------------------------------------------------------------------- (16, 17) GPU placement


def gpu_pod(pod: Mapping) -> bool:
    return any(gpu_resources(c) for _, c in containers(pod))


def tolerates_gpu_taint(pod: Mapping) -> bool:
    for t in items(get(pod, "tolerations")):
        effect_ok = get(t, "effect") in (None, "", "NoSchedule")
        if get(t, "key") is None and get(t, "operator") == "Exists" and effect_ok:
            return True  # tolerates every taint
        if get(t, "key") == GPU_TAINT_KEY and get(t, "operator", default="Equal") in ("Exists", "Equal") and effect_ok:
            return True
    return False


def _labels(value: Any) -> dict:
    return dict(value) if isinstance(value, Mapping) else {}


def selected_group(pod: Mapping, groups: Mapping) -> Optional[str]:
    """The GPU group whose node selector the pod's nodeSelector is, or None."""
    selector = _labels(get(pod, "nodeSelector"))
    return next((name for name, g in groups.items() if selector and _labels(get(g, "selector")) == selector), None)


def _gpu_scheduling(args: ResourceValidationArgs, report) -> None:
    for pod in filter(gpu_pod, pod_specs(args.resource_type, args.props)):
        _gpu_pod_scheduling(pod, setting(args, "gpuGroups"), report)


def _gpu_pod_scheduling(pod: Mapping, groups: Mapping, report) -> None:
    if not tolerates_gpu_taint(pod):
        report(fix(f"GPU pod does not tolerate the {GPU_TAINT_KEY} taint",
                   f"add a toleration for {GPU_TAINT_KEY} (NoSchedule), as gpu_profiles.gpu_scheduling builds"), None)
    selector = _labels(get(pod, "nodeSelector"))
    hint = "set nodeSelector to the GPU group's selector: the stack file's cluster.nodeGroups[].selector"
    if not selector:
        report(fix("GPU pod selects no GPU group (it has no nodeSelector)", hint), None)
    elif groups and selected_group(pod, groups) is None:
        known = "; ".join(f"{name}: {_labels(get(g, 'selector'))}" for name, g in sorted(groups.items()))
        report(fix(f"GPU pod's nodeSelector {selector} is no GPU group's selector ({known})", hint), None)


gpu_workloads_scheduling = ResourceValidationPolicy(
    name="gpu-workloads-scheduling",
    description="GPU workloads tolerate the nvidia.com/gpu taint and select a GPU node group by its selector.",
    enforcement_level=MANDATORY,
    validate=_gpu_scheduling,
    config_schema=schema("gpuGroups"),
)


def _gpu_profile(args: ResourceValidationArgs, report) -> None:
    groups = setting(args, "gpuGroups")
    for pod in filter(gpu_pod, pod_specs(args.resource_type, args.props)) if groups else ():
        group = selected_group(pod, groups)
        if group is None:
            continue  # gpu-workloads-scheduling reports it
        offered = list(get(groups[group], "resources", default=[]))
        for _, c in containers(pod):
            for res in gpu_resources(c):
                if res not in offered:
                    slice_ = "MIG slice " if res.startswith("nvidia.com/mig-") else ""
                    report(fix(f"container {get(c, 'name')!r} asks for {slice_}{res}, which nodes of group {group!r} "
                               f"do not advertise (they offer {', '.join(offered) or 'nothing'})",
                               "ask for a resource of the group's sharing profile (gpu.migProfile of the version, or the "
                               "group's sharing.migProfile)"), None)


gpu_resources_in_group_profile = ResourceValidationPolicy(
    name="gpu-resources-in-group-profile",
    description="GPU resource names (nvidia.com/gpu, nvidia.com/mig-<profile>, ...) exist in the selected group's profile.",
    enforcement_level=MANDATORY,
    validate=_gpu_profile,
    config_schema=schema("gpuGroups"),
)


# --------------------------------------------------------------------------- (18) Triton probes

_PROBES = ("startupProbe", "readinessProbe", "livenessProbe")


def _triton_probes(args: ResourceValidationArgs, report) -> None:
    for c in (c for pod in pod_specs(args.resource_type, args.props) for _, c in containers(pod)):
        missing = [p for p in _PROBES if runs_tritonserver(c) and get(c, p) is None]
        if missing:
            report(fix(f"Triton container {get(c, 'name')!r} lacks {', '.join(missing)}",
                       "probe /v2/health/ready (startup covering the model load, readiness) and /v2/health/live"), None)


triton_probes = ResourceValidationPolicy(
    name="triton-probes",
    description="Triton containers have startup, readiness and liveness probes.",
    enforcement_level=MANDATORY,
    validate=_triton_probes,
)


# --------------------------------------------------------------------------- (19) CRD ordering


def chart_name(props: Mapping) -> str:
    """`istio/base`, `oci://registry/charts/base` and `base` all name the chart `base`."""
    return chart_name_of(get(props, "chart", default=""), str(get(props, "version", default="")))


def _crd_order(args: StackValidationArgs, report) -> None:
    charts: Mapping = setting(args, "crdCharts")
    releases = [r for r in args.resources if r.resource_type == HELM_RELEASE]
    for r in args.resources:
        group = api_group(r.resource_type)
        if group not in charts:
            continue
        wanted = set(items(charts[group]))
        if not any(chart_name(rel.props) in wanted for rel in releases):
            continue  # the CRDs come from outside the stack (e.g. the cluster's own Istio)
        direct = [d for d in r.dependencies if d.resource_type == HELM_RELEASE and chart_name(d.props) in wanted]
        if not direct:
            report(fix(f"{kind(r.resource_type)} {r.name} ({group}) does not depend on the Helm release that "
                       f"installs its CRDs (chart {' or '.join(sorted(wanted))})",
                       "add depends_on=[<that release>] (the part's handle exposes it, e.g. mesh.crds)"), r.urn)


crd_resources_depend_on_release = StackValidationPolicy(
    name="crd-resources-depend-on-release",
    description="Custom resources of CRD-installing charts (Istio, Prometheus operator, NVIDIA, NFD, KubeRay, Argo Workflows) depend directly on that Helm release.",
    enforcement_level=MANDATORY,
    validate=_crd_order,
    config_schema=schema("crdCharts"),
)


POLICIES = [
    inference_namespace_injection,
    virtualservice_weights_sum,
    virtualservice_subsets_exist,
    hpa_target_exists,
    hpa_target_sets_no_replicas,
    gpu_requests_equal_limits,
    gpu_workloads_scheduling,
    gpu_resources_in_group_profile,
    triton_probes,
    crd_resources_depend_on_release,
]

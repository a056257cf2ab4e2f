"""Which input changes make `pulumi up` replace a resource, per resource type.

The rules are data read from the providers' own sources at the pinned versions
(`SOURCES`; tests/plan/test_replacement.py fails when a pin moves and they were not
re-read). Paths are in the language of propertypath.py. A change at or below a rule
path forces a replacement; so does a change above one that adds or removes what the
rule names (a whole `spec.selector` appearing). `rules_for` resolves a resource to
its rules, or None for a type nobody has read the rules of.
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass
from typing import Any, Optional

from .propertypath import Path, exists, is_prefix, parse, value_at


@dataclass(frozen=True)
class Source:
    package: str  # the pinned package whose behaviour the rules describe ("" for our own code)
    version: str  # the version of it the rules were read at
    read: str  # what was read


SOURCES: dict[str, Source] = {
    "openstack": Source(
        "pulumi-openstack", "5.5.3",
        "terraform-provider-openstack v3.4.0 (4fd8eba1f85e), the upstream pinned by pulumi-openstack's "
        "provider/go.mod (v5.5.1 and main at be2f880): `ForceNew: true` in openstack/resource_openstack_"
        "{containerinfra_cluster_v1,containerinfra_clustertemplate_v1,containerinfra_nodegroup_v1,"
        "sharedfilesystem_share_v2,sharedfilesystem_share_access_v2}.go; cross-checked with the installed "
        "SDK's docstrings ('Changing this creates a new ...'), see OPENSTACK_DOCSTRING_ERRATA",
    ),
    "kubernetes": Source(
        "pulumi-kubernetes", "4.34.2",
        "pulumi/pulumi-kubernetes provider/pkg/provider/diff.go (forceNew table, last changed 2ec7a1a "
        "2024-08-21), provider.go (Diff: .metadata.name/.metadata.namespace always, Secret/ConfigMap "
        "mutability flags; DiffConfig), util.go (getActiveClusterFromConfig), helm_release.go (Diff: .name, "
        ".namespace), read at 9497796 (after v4.32.0, the newest source available)",
    ),
    "random": Source(
        "pulumi-random", "4.21.4",
        "hashicorp/terraform-provider-random f8d869dc98d9 (pinned by pulumi-random's provider/go.mod): "
        "internal/provider/resource_password.go, resource_string.go: RequiresReplace on every argument",
    ),
    "dynamic": Source("", "", "components/weights/s3/bucket.py: BucketProvider.diff; upload.py: UploadProvider.diff"),
    "pulumi": Source(
        "pulumi", "3.272.0",
        "pulumi/pulumi pkg/resource/deploy/step_generator.go (providerChanged, diff without a provider for "
        "components, protect on replace (old and new), same steps, GenerateReadSteps, processIgnoreChanges) and "
        "step.go (DeleteStep: retainOnDelete), read at 1b59498 (3.259.0+, the newest source available); "
        "pulumi-terraform-bridge pkg/tfbridge nameRequiresDeleteBeforeReplace",
    ),
}


@dataclass(frozen=True)
class Rules:
    paths: tuple[Path, ...]
    source: str  # key of SOURCES
    # Replacement is off while these inputs are set and unchanged (the Kubernetes provider's clusterIdentifier).
    unless_same: tuple[str, ...] = ()


# --------------------------------------------------------------------------- openstack

# Terraform schema attributes with `ForceNew: true`, by their Pulumi input names.
OPENSTACK: dict[str, tuple[str, ...]] = {
    "openstack:containerinfra/cluster:Cluster": (
        "createTimeout", "discoveryUrl", "dockerVolumeSize", "fixedNetwork", "fixedSubnet", "flavor",
        "floatingIpEnabled", "keypair", "labels", "masterCount", "masterFlavor", "masterLbEnabled",
        "mergeLabels", "name", "region",
    ),
    "openstack:containerinfra/clusterTemplate:ClusterTemplate": ("region",),
    "openstack:containerinfra/nodeGroup:NodeGroup": (
        "clusterId", "dockerVolumeSize", "flavorId", "imageId", "labels", "mergeLabels", "name", "region", "role",
    ),
    "openstack:sharedfilesystem/share:Share": (
        "availabilityZone", "region", "shareNetworkId", "shareProto", "shareType", "snapshotId",
    ),
    "openstack:sharedfilesystem/shareAccess:ShareAccess": ("accessLevel", "accessTo", "accessType", "region", "shareId"),
}

# What the SDK's docstrings say ("Changing this creates a new ..."), as derive_openstack_docstrings()
# reads them from the installed pulumi_openstack; the test re-derives and compares.
OPENSTACK_SDK_DOCSTRINGS: dict[str, tuple[str, ...]] = {
    "openstack:containerinfra/cluster:Cluster": (
        "clusterTemplateId", "createTimeout", "discoveryUrl", "dockerVolumeSize", "fixedNetwork", "fixedSubnet",
        "flavor", "floatingIpEnabled", "keypair", "labels", "masterCount", "masterFlavor", "masterLbEnabled",
        "mergeLabels", "name", "region",
    ),
    "openstack:containerinfra/clusterTemplate:ClusterTemplate": ("region",),
    "openstack:containerinfra/nodeGroup:NodeGroup": (
        "clusterId", "dockerVolumeSize", "flavorId", "labels", "mergeLabels", "name", "region", "role",
    ),
    "openstack:sharedfilesystem/share:Share": (
        "availabilityZone", "region", "shareNetworkId", "shareProto", "snapshotId",
    ),
    "openstack:sharedfilesystem/shareAccess:ShareAccess": ("region",),
}

# Where the docstrings (copied from the Terraform docs) disagree with the schema the bridge runs.
OPENSTACK_DOCSTRING_ERRATA: dict[tuple[str, str], str] = {
    ("openstack:containerinfra/cluster:Cluster", "clusterTemplateId"):
        "docs say it creates a new cluster; the schema has ForceNew: false and Update runs a Magnum cluster upgrade",
    ("openstack:containerinfra/nodeGroup:NodeGroup", "imageId"):
        "docs say it updates the node group; the schema has ForceNew: true",
    ("openstack:sharedfilesystem/share:Share", "shareType"): "docs are silent; the schema has ForceNew: true",
    ("openstack:sharedfilesystem/shareAccess:ShareAccess", "accessLevel"): "docs are silent; ForceNew: true",
    ("openstack:sharedfilesystem/shareAccess:ShareAccess", "accessTo"): "docs are silent; ForceNew: true",
    ("openstack:sharedfilesystem/shareAccess:ShareAccess", "accessType"): "docs are silent; ForceNew: true",
    ("openstack:sharedfilesystem/shareAccess:ShareAccess", "shareId"): "docs are silent; ForceNew: true",
}

_CREATES_NEW = re.compile(r"\bChanging this (?:will )?creates? a new\b")


def sdk_class(type_token: str):
    """The SDK class of a type token such as openstack:containerinfra/nodeGroup:NodeGroup."""
    package, module, name = type_token.split(":")
    module = module.split("/")[0]
    mod = importlib.import_module(f"pulumi_{package}" + ("" if module == "index" else f".{module}"))
    return getattr(mod, name)


def sdk_inputs(type_token: str) -> dict[str, str]:
    """Every input of the type's `<Name>Args` class in the installed SDK: wire name -> docstring."""
    cls = sdk_class(type_token)
    args = getattr(inspect.getmodule(cls), cls.__name__ + "Args")
    out = {}
    for name, prop in inspect.getmembers(args, lambda m: isinstance(m, property)):
        wire = getattr(prop.fget, "_pulumi_name", name)
        out[wire] = " ".join((prop.fget.__doc__ or "").split())
    return out


def derive_openstack_docstrings(type_token: str) -> tuple[str, ...]:
    """The inputs whose docstring says that changing them creates a new resource."""
    return tuple(sorted(k for k, doc in sdk_inputs(type_token).items() if _CREATES_NEW.search(doc)))


# --------------------------------------------------------------------------- random

_RANDOM_ARGUMENTS = (
    "keepers", "length", "lower", "minLower", "minNumeric", "minSpecial", "minUpper", "number", "numeric",
    "overrideSpecial", "special", "upper",
)
RANDOM: dict[str, tuple[str, ...]] = {
    "random:index/randomPassword:RandomPassword": _RANDOM_ARGUMENTS,
    "random:index/randomString:RandomString": _RANDOM_ARGUMENTS,
}

# --------------------------------------------------------------------------- our dynamic providers

# The `replaces` of each provider's diff (tests call diff() to confirm).
DYNAMIC: dict[str, tuple[str, ...]] = {
    "pulumi-python:dynamic/s3:Bucket": ("bucket",),  # a new endpoint is an update (bucket.py)
    "pulumi-python:dynamic/s3:Upload": (),
}

# --------------------------------------------------------------------------- kubernetes

# diff.go's forceNew table: group -> version -> kind -> paths (jsonpath there, property paths here).
_SELECTOR = (
    "spec.selector", "spec.selector.matchExpressions", "spec.selector.matchExpressions.key",
    "spec.selector.matchExpressions.operator", "spec.selector.matchExpressions.values", "spec.selector.matchLabels",
)
_PVC_SELECTOR = tuple(p for p in _SELECTOR if p != "spec.selector")
_DAEMONSET = _SELECTOR
_DEPLOYMENT = _SELECTOR
_JOB = ("spec.completions", "spec.parallelism", "spec.selector", "spec.template") + _SELECTOR[1:]
_STATEFULSET = (
    "spec.podManagementPolicy", "spec.revisionHistoryLimit", "spec.selector", "spec.serviceName",
    "spec.volumeClaimTemplates",
) + _SELECTOR[1:]
_ROLE_BINDING = ("roleRef",)
_CONTAINER_FIELDS = (
    "args", "command", "env", "env.value", "image", "imagePullPolicy", "lifecycle", "livenessProbe", "ports",
    "readinessProbe", "resources", "securityContext", "stdin", "stdinOnce", "terminationMessagePath",
    "terminationMessagePolicy", "tty", "volumeDevices", "volumeMounts", "workingDir",
)
_CORE_V1 = {
    "PersistentVolume": tuple(f"spec.{v}" for v in (
        "awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc", "flexVolume", "flocker",
        "gcePersistentDisk", "glusterfs", "hostPath", "iscsi", "local", "nfs", "photonPersistentDisk",
        "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "vsphereVolume",
    )),
    "PersistentVolumeClaim": (
        "spec.accessModes", "spec.selector", "spec.storageClassName", "spec.volumeName",
    ) + _PVC_SELECTOR,
    "Pod": tuple(f"spec.{v}" for v in (
        "affinity", "automountServiceAccountToken", "dnsConfig", "dnsPolicy", "enableServiceLinks", "hostAliases",
        "hostIPC", "hostNetwork", "hostPID", "hostname", "imagePullSecrets", "nodeName", "nodeSelector", "overhead",
        "preemptionPolicy", "priority", "priorityClassName", "readinessGates", "restartPolicy", "runtimeClassName",
        "schedulerName", "securityContext", "serviceAccount", "serviceAccountName", "shareProcessNamespace",
        "subdomain", "terminationGracePeriodSeconds", "volumes",
    )) + tuple(f"spec.{c}[*].{f}" for c in ("containers", "initContainers") for f in _CONTAINER_FIELDS),
    "ResourceQuota": ("spec.scopes",),
    "Secret": ("type",),
    "Service": ("spec.clusterIP",),
}
KUBERNETES_FORCE_NEW: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {
    "apps": {
        "v1beta1": {"StatefulSet": _STATEFULSET},
        "v1beta2": {"DaemonSet": _DAEMONSET, "Deployment": _DEPLOYMENT, "StatefulSet": _STATEFULSET},
        "v1": {"DaemonSet": _DAEMONSET, "Deployment": _DEPLOYMENT, "StatefulSet": _STATEFULSET},
    },
    "core": {"v1": _CORE_V1},
    "policy": {"v1beta1": {"PodDisruptionBudget": ("spec",)}},
    "rbac.authorization.k8s.io": {
        v: {"ClusterRoleBinding": _ROLE_BINDING, "RoleBinding": _ROLE_BINDING} for v in ("v1alpha1", "v1beta1", "v1")
    },
    "storage.k8s.io": {"v1": {"StorageClass": ("parameters", "provisioner")}},
    "batch": {v: {"Job": _JOB} for v in ("v1beta1", "v1", "v2alpha1")},
}
KUBERNETES_IDENTITY = ("metadata.name", "metadata.namespace")
# With the provider's enableSecretMutable / enableConfigMapMutable off (the default), or the
# object `immutable: true`, its contents replace it.
KUBERNETES_IMMUTABLE_CONTENT = {
    "Secret": (("type", "stringData", "data"), "enableSecretMutable"),
    "ConfigMap": (("binaryData", "data"), "enableConfigMapMutable"),
}
# Kinds the program declares that the forceNew table has no entry for (their group, version or
# kind is absent): the identity rules apply, and to ConfigMap its content rule. Listed so that a
# new kind is looked up in the provider's source before it is planned.
KUBERNETES_WITHOUT_KIND_ENTRY = frozenset({
    # diff.go names no apiextensions group: a CRD's schema edit (a new Gateway API release) is an update.
    "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition",
    "kubernetes:argoproj.io/v1alpha1:WorkflowTemplate",
    "kubernetes:autoscaling/v2:HorizontalPodAutoscaler",
    "kubernetes:core/v1:ConfigMap",
    "kubernetes:core/v1:Namespace",
    "kubernetes:core/v1:ServiceAccount",
    # Gateway API kinds are CRDs too (serving/llm_routing.py): identity rules alone.
    "kubernetes:gateway.networking.k8s.io/v1:Gateway",
    "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute",
    "kubernetes:gateway.networking.k8s.io/v1:ReferenceGrant",
    "kubernetes:monitoring.coreos.com/v1:PodMonitor",
    "kubernetes:monitoring.coreos.com/v1:PrometheusRule",
    "kubernetes:monitoring.coreos.com/v1:ServiceMonitor",
    "kubernetes:networking.istio.io/v1:DestinationRule",
    # A CRD (Istio): a spec edit (Basic Auth users) is an update istiod pushes to the gateway.
    "kubernetes:networking.istio.io/v1alpha3:EnvoyFilter",
    "kubernetes:networking.istio.io/v1:Gateway",
    "kubernetes:networking.istio.io/v1:Sidecar",
    "kubernetes:networking.istio.io/v1:VirtualService",
    "kubernetes:networking.k8s.io/v1:NetworkPolicy",
    "kubernetes:nfd.k8s-sigs.io/v1alpha1:NodeFeatureRule",
    "kubernetes:policy/v1:PodDisruptionBudget",
    # A CRD (KubeRay): diff.go's table names built-in groups only, so identity rules alone; a
    # spec edit (a step's image) is an update the KubeRay operator rolls out.
    "kubernetes:ray.io/v1:RayService",
    # Kueue's CRDs: identity rules alone. What Kueue itself refuses to change (a Topology's levels,
    # a topology flavor's labels, tolerations and topology) is in the objects' names, which carry a
    # digest of it (training/kueue.py), so such an edit is a new object, never a refused update.
    *(f"kubernetes:kueue.x-k8s.io/v1beta2:{kind}" for kind in (
        "ClusterQueue", "Cohort", "LocalQueue", "ResourceFlavor", "Topology", "WorkloadPriorityClass")),
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
    # A patch of a chart's ClusterRole (core/common.aggregation_stopped): the provider diffs a
    # patch as the kind it patches, and ClusterRole has no entry either.
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRolePatch",
    "kubernetes:rbac.authorization.k8s.io/v1:Role",
    "kubernetes:scheduling.k8s.io/v1:PriorityClass",
    "kubernetes:security.istio.io/v1:AuthorizationPolicy",
    "kubernetes:security.istio.io/v1:PeerAuthentication",
    "kubernetes:security.istio.io/v1:RequestAuthentication",
    "kubernetes:telemetry.istio.io/v1:Telemetry",
    # Kubeflow Trainer's CRDs: identity rules alone from the provider; a TrainJob's immutable
    # fields replace it through its own replaceOnChanges (components/training/jobs.py).
    "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime",
    "kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob",
})
HELM_RELEASE = ("name", "namespace")
# The provider's config diff is a function, not a table (kubernetes_diff_config below); the
# paths name the inputs it reads. rules_for returns them for tools that list rules.
KUBERNETES_PROVIDER = "pulumi:providers:kubernetes"
ACTIVE_CLUSTER_INPUTS = ("kubeconfig", "context", "cluster")
PROVIDERS: dict[str, Rules] = {
    KUBERNETES_PROVIDER: Rules(
        tuple(parse(p) for p in ("clusterIdentifier", *ACTIVE_CLUSTER_INPUTS, "renderYamlToDirectory")),
        "kubernetes", unless_same=("clusterIdentifier",),
    ),
}


@dataclass(frozen=True)
class ConfigDiff:
    replaces: Optional[str]  # the input that replaces the provider and every resource it manages, or None
    note: str = ""  # what the offline plan cannot know and what it would change


def kubernetes_diff_config(old: dict[str, Any], new: dict[str, Any], changed: set[str], unknown: set[str],
                           active: tuple[Optional[str], Optional[str]] = (None, None)) -> ConfigDiff:
    """pulumi-kubernetes provider.go DiffConfig on the provider's top-level inputs: `changed` are
    the inputs that differ (secret ones by their digests), `unknown` those unknown until a replaced
    dependency exists again, `active` the old and new active cluster's digests where the plan
    could resolve them (engine.active_cluster_digest), as getActiveClusterFromConfig does."""
    if not changed and not unknown:
        return ConfigDiff(None)
    ident = "clusterIdentifier"
    # A set, unchanged clusterIdentifier clears every replacement; adding or removing it replaces nothing.
    if ident in new and old.get(ident) == new[ident]:
        return ConfigDiff(None)
    if ident in old and ident in new:
        return ConfigDiff(ident)
    for key in ACTIVE_CLUSTER_INPUTS:
        if key in unknown:  # "we can't tell for sure if a computed value has changed"
            return ConfigDiff(key)
    if "renderYamlToDirectory" in changed:
        return ConfigDiff("renderYamlToDirectory")
    moved = [k for k in ACTIVE_CLUSTER_INPUTS if k in changed]
    if not moved:
        return ConfigDiff(None)
    if all(active):
        return ConfigDiff(moved[0] if active[0] != active[1] else None)
    # Replacement only when both kubeconfigs resolve to an active cluster and those differ.
    edits = ", ".join(f"{k} {old.get(k, '(unset)')!r} -> {new.get(k, '(unset)')!r}" if k != "kubeconfig"
                      else "kubeconfig" for k in moved)
    if "kubeconfig" not in old or "kubeconfig" not in new:
        # The Python SDK sends $KUBECONFIG (a path) as `kubeconfig` where the program gives none.
        where = ("the kubeconfig is ambient: with $KUBECONFIG unset where `pulumi up` runs, DiffConfig finds no "
                 "active cluster and nothing is replaced; with it set, everything this provider manages is replaced "
                 "if the old and new settings name different clusters in that file")
    else:
        where = ("the plan cannot read this kubeconfig (a secret given in the stack file, or a path), so it cannot "
                 "tell whether the active cluster changes: if it does, everything this provider manages is "
                 "replaced; if the new settings name the same cluster (another context for it), nothing is")
    return ConfigDiff(None, f"{edits}: {where} (pulumi-kubernetes DiffConfig)")


def _flag(provider_inputs: Optional[dict[str, Any]], key: str) -> bool:
    value = (provider_inputs or {}).get(key)
    return value is True or value == "true"


def _kubernetes(type_token: str, inputs: dict[str, Any], provider_inputs: Optional[dict[str, Any]]) -> Optional[Rules]:
    group_version, kind = type_token.split(":")[1:]
    if group_version == "helm.sh/v3" and kind == "Release":
        return Rules(tuple(parse(p) for p in HELM_RELEASE), "kubernetes")
    group, _, version = group_version.rpartition("/")
    kinds = KUBERNETES_FORCE_NEW.get(group, {}).get(version)
    if (kinds is None or kind not in kinds) and type_token not in KUBERNETES_WITHOUT_KIND_ENTRY:
        return None
    paths = list(KUBERNETES_IDENTITY)
    # provider.go forceNewProperties: the immutable-content rule wins over the kind's own entry.
    immutable = inputs.get("immutable") is True
    content = KUBERNETES_IMMUTABLE_CONTENT.get(kind) if group == "core" and kinds is not None else None
    if kind == "Secret" and content and (not _flag(provider_inputs, content[1]) or immutable):
        paths += content[0]
    elif kinds is not None and kind in kinds:
        paths += kinds[kind]
    elif content and (not _flag(provider_inputs, content[1]) or immutable):
        paths += content[0]
    return Rules(tuple(parse(p) for p in paths), "kubernetes")


# Fields the API server refuses to change although the provider's diff calls the edit an update,
# so `pulumi up` fails on it: kubernetes/kubernetes pkg/apis/scheduling/validation/validation.go
# ValidatePriorityClassUpdate ("value is immutable", "preemptionPolicy is immutable").
APISERVER_IMMUTABLE: dict[str, tuple[str, ...]] = {
    "kubernetes:scheduling.k8s.io/v1:PriorityClass": ("value", "preemptionPolicy"),
}


def refused_update(type_token: str, changes: list[Path]) -> Optional[Path]:
    """The first change of an update that the API server refuses (APISERVER_IMMUTABLE), or None."""
    for field in APISERVER_IMMUTABLE.get(type_token, ()):
        for change in changes:
            if change[:1] == (field,):
                return change
    return None


# Resources the program reads rather than registers (ReadResource). step_generator.go
# GenerateReadSteps: a read of an external resource is a read step, whatever its id or inputs
# (a read-replacement only takes over a resource the stack created, which a read never is).
READS = frozenset({"pulumi:pulumi:StackReference"})


# The environment variable the provider falls back to where its own flag is unset (provider.go
# Configure; the Python SDK also copies it into the provider's inputs). The offline plan renders
# with it unset (engine._pinned_provider_environment), so its rules assume immutable contents.
MUTABILITY_ENV = {"enableSecretMutable": "PULUMI_K8S_ENABLE_SECRET_MUTABLE",
                  "enableConfigMapMutable": "PULUMI_K8S_ENABLE_CONFIGMAP_MUTABLE"}


def mutability_note(resource: dict[str, Any], provider_inputs: Optional[dict[str, Any]], forced: Path) -> str:
    """Where a Secret's or ConfigMap's content change replaces it only because the provider's
    mutability flag is unset: what `pulumi up` does in an environment that sets it."""
    kind = resource["type"].rsplit(":", 1)[-1]
    content = KUBERNETES_IMMUTABLE_CONTENT.get(kind) if resource["type"].startswith("kubernetes:core/v1:") else None
    if (content is None or forced[:1] not in [(f,) for f in content[0] if f != "type"] or (resource.get("inputs") or {}).get("immutable")
            or content[1] in (provider_inputs or {})):
        return ""
    return (f"replaced because its provider leaves {content[1]} unset and the plan assumes {MUTABILITY_ENV[content[1]]} "
            "unset where `pulumi up` runs; set to true there, this is an update in place")


def rules_for(resource: dict[str, Any], provider_inputs: Optional[dict[str, Any]] = None) -> Optional[Rules]:
    """The replacement rules of a plan resource (resources.json form), or None if unread.

    `provider_inputs` are the inputs of its explicit provider, for provider-level switches.
    """
    type_token = resource["type"]
    if not resource.get("custom", True) or type_token in READS:
        # Components have no provider: the engine diffs their inputs and only ever updates.
        return Rules((), "pulumi")
    for source, table in (("openstack", OPENSTACK), ("random", RANDOM), ("dynamic", DYNAMIC)):
        if type_token in table:
            return Rules(tuple(parse(p) for p in table[type_token]), source)
    if type_token in PROVIDERS:
        return PROVIDERS[type_token]
    if type_token.startswith("kubernetes:"):
        return _kubernetes(type_token, resource.get("inputs") or {}, provider_inputs)
    return None


def forcing_change(rules: Rules, old: dict[str, Any], new: dict[str, Any], changes: list[Path]) -> Optional[Path]:
    """The first changed path that forces a replacement under `rules`, or None."""
    for key in rules.unless_same:
        if key in new and old.get(key) == new[key]:
            return None
    for change in changes:
        for rule in rules.paths:
            if is_prefix(rule, change):
                return change
            if is_prefix(change, rule):
                # A change above the rule (a subtree added, removed or retyped) forces it when
                # either side has something at the rule's path.
                rest = rule[len(change):]
                if exists(value_at(old, change), rest) or exists(value_at(new, change), rest):
                    return change
    return None

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
        "mutability flags; DiffConfig), helm_release.go (Diff: .name, .namespace), read at 9497796 "
        "(after v4.32.0, the newest source available)",
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
        "components, protect on replace, processIgnoreChanges) and step.go (DeleteStep: retainOnDelete), "
        "read at 1b59498 (3.259.0+, the newest source available)",
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
    "kubernetes:argoproj.io/v1alpha1:WorkflowTemplate",
    "kubernetes:autoscaling/v2:HorizontalPodAutoscaler",
    "kubernetes:core/v1:ConfigMap",
    "kubernetes:core/v1:Namespace",
    "kubernetes:core/v1:ServiceAccount",
    "kubernetes:monitoring.coreos.com/v1:PodMonitor",
    "kubernetes:monitoring.coreos.com/v1:PrometheusRule",
    "kubernetes:monitoring.coreos.com/v1:ServiceMonitor",
    "kubernetes:networking.istio.io/v1:DestinationRule",
    "kubernetes:networking.istio.io/v1:Gateway",
    "kubernetes:networking.istio.io/v1:VirtualService",
    "kubernetes:networking.k8s.io/v1:NetworkPolicy",
    "kubernetes:nfd.k8s-sigs.io/v1alpha1:NodeFeatureRule",
    "kubernetes:policy/v1:PodDisruptionBudget",
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
    "kubernetes:rbac.authorization.k8s.io/v1:Role",
    "kubernetes:scheduling.k8s.io/v1:PriorityClass",
    "kubernetes:security.istio.io/v1:AuthorizationPolicy",
    "kubernetes:security.istio.io/v1:PeerAuthentication",
    "kubernetes:telemetry.istio.io/v1:Telemetry",
})
HELM_RELEASE = ("name", "namespace")
# DiffConfig: a change of the active cluster (kubeconfig, context, cluster; any change counts here,
# the offline plan sees kubeconfig only as [secret]) or of renderYamlToDirectory replaces the
# provider and with it every resource it manages; a set, unchanged clusterIdentifier turns that off.
PROVIDERS: dict[str, Rules] = {
    "pulumi:providers:kubernetes": Rules(
        tuple(parse(p) for p in ("clusterIdentifier", "cluster", "context", "kubeconfig", "renderYamlToDirectory")),
        "kubernetes", unless_same=("clusterIdentifier",),
    ),
}


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


def rules_for(resource: dict[str, Any], provider_inputs: Optional[dict[str, Any]] = None) -> Optional[Rules]:
    """The replacement rules of a plan resource (resources.json form), or None if unread.

    `provider_inputs` are the inputs of its explicit provider, for provider-level switches.
    """
    type_token = resource["type"]
    if not resource.get("custom", True):
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

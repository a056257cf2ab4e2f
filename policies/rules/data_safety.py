"""Data-safety policies: in production, what holds data or the cluster itself is protected."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy

from .kube import fix, get, is_kind, items, name_of, namespace_of, pod_specs, schema, setting

STATEFUL_TYPES = {
    "openstack:containerinfra/cluster:Cluster": "Magnum cluster",
    "openstack:containerinfra/nodeGroup:NodeGroup": "Magnum node group",
    "openstack:sharedfilesystem/share:Share": "file share",
}
_DYNAMIC = ("pulumi-python:dynamic", "pulumi-nodejs:dynamic")


def is_bucket(resource_type: str, props) -> bool:
    """The S3 bucket provider's resources: `<dynamic>/s3:Bucket`, or a generic dynamic
    resource that names a bucket and is not an upload into one."""
    if not resource_type.startswith(_DYNAMIC):
        return False
    if resource_type.endswith(":Bucket"):
        return True
    return resource_type.endswith(":Resource") and get(props, "bucket") is not None and get(props, "prefix") is None


def mounted_claims(resources: list) -> set[tuple[str, str]]:
    """(namespace, claim) of every PersistentVolumeClaim a workload of the stack mounts."""
    out = set()
    for r in resources:
        for v in (v for pod in pod_specs(r.resource_type, r.props) for v in items(get(pod, "volumes"))):
            claim = get(v, "persistentVolumeClaim", "claimName")
            if claim:
                out.add((namespace_of(r.props), claim))
    return out


def stateful_kind(r, claims: set[tuple[str, str]]) -> str | None:
    if r.resource_type in STATEFUL_TYPES:
        return STATEFUL_TYPES[r.resource_type]
    if is_bucket(r.resource_type, r.props):
        return "bucket"
    if is_kind(r.resource_type, "PersistentVolumeClaim") and (namespace_of(r.props), name_of(r.props)) in claims:
        return "weight volume claim"
    return None


def _protected(args: StackValidationArgs, report) -> None:
    if not setting(args, "production"):
        return
    claims = mounted_claims(args.resources)
    for r in args.resources:
        what = stateful_kind(r, claims)
        if what and not r.opts.protect:
            report(fix(f"{what} {r.name} is not protected in a production stack",
                       "declare it with protect=True when settings.production (and retain_on_delete where "
                       "deleting it would lose data)"), r.urn)


stateful_resources_protected = StackValidationPolicy(
    name="stateful-resources-protected",
    description="In production stacks the cluster, node groups, file shares, buckets and weight PVCs are protected.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_protected,
    config_schema=schema("production"),
)

POLICIES = [stateful_resources_protected]

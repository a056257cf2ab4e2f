"""What WeightCaches takes, and `WeightsRef`: what a workload reading the caches needs of them."""

from __future__ import annotations

from typing import Iterable, Optional

from pydantic import SecretStr

from inference_platform.core.input_types import NameInput, TextInput
from inference_platform.settings.base import DnsLabel, Labels, Model, RelativePath
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.serving import ModelRepository
from inference_platform.settings.tuning import BatchingPreset, PresetName
from inference_platform.settings.weights import (
    MANILA_NEEDS_CIDRS,
    WeightCacheSettings,
    adopted_bucket_problems,
    needs_access_cidrs,
    upload_prefix_overlaps,
)
from inference_platform.timing.estimates import GroupEstimate
from inference_platform.tuning.presets import upload_config_problems


class WeightCachesInputs(Model):
    """Caches of model weights: an NFS file share and an S3 bucket, with what each namespace needs to read them."""

    weight_caches: WeightCacheSettings = WeightCacheSettings()
    """The caches (the stack file's `weightCaches`)."""
    file_share_namespaces: list[DnsLabel] = []
    """Namespaces whose services read the file share: each gets a claim on it."""
    read_only_namespaces: list[DnsLabel] = []
    """Namespaces of `file_share_namespaces` whose claim is read-only at its PersistentVolume (`nfs.readOnly`), whatever a pod asks: the training teams', so nothing there writes the share through it (serving's model repositories included)."""
    writable_directories: dict[DnsLabel, dict[DnsLabel, RelativePath]] = {}
    """Per namespace, read-write claims of single directories of the file share (claim name -> path in the share): a training job's checkpoint directory. Its PersistentVolume is rooted at the directory, which must exist on the share and be writable by the UID that writes it (NFS volumes take no fsGroup)."""
    s3_namespaces: list[DnsLabel] = []
    """Namespaces whose services read the S3 bucket: each gets the credentials Secret (and the bucket mount's claim)."""
    namespace_names: dict[DnsLabel, NameInput] = {}
    """The namespaces above as their creator outputs them (a Namespace's `metadata.name`), keyed by name: each claim and Secret in one then waits for it, and the share and bucket do not. A namespace left out is used by its plain name."""
    production: bool = False
    """Protect and retain the share, the bucket and the claims."""
    s3_access_key_id: Optional[SecretStr] = None
    """Secret. Access key of the S3 cache."""
    s3_secret_access_key: Optional[SecretStr] = None
    """Secret. Secret key of the S3 cache."""
    node_groups: list[NodeGroup] = []
    """The cluster's node groups: the bucket mount's node plugin tolerates their taints."""
    subnet_cidr: Optional[TextInput] = None
    """CIDR of the cluster's node subnet: the addresses a Manila share grants read access to."""
    cold_start: list[GroupEstimate] = []
    """Per GPU group, the cold-start estimate (the bucket mount's node plugin runs on every GPU node)."""
    tuning_presets: dict[PresetName, BatchingPreset] = {}
    """Tuning presets the uploads may name beside the built-in `latency` and `throughput` (the stack file's `tuningPresets`; a name here replaces the built-in one)."""
    system_node_selector: Labels = {}
    """Node labels the csi-s3 provisioner's pods select, so that they stay off GPU nodes: the platform's system group (on Magnum the cluster's first, CPU group). Empty: any node that admits them. The node plugin runs on every node."""

    def problems(self) -> list[tuple[KeyPath, str]]:
        """What the stack file's cross checks ensure about the caches, for the component used alone."""
        found: list[tuple[KeyPath, str]] = []
        if needs_access_cidrs(self.weight_caches, self.subnet_cidr):
            found.append((("weight_caches", "fileShare", "accessCidrs"), MANILA_NEEDS_CIDRS))
        if self.weight_caches.s3 is not None:
            found += [((key,), f"weightCaches.s3 needs the S3 cache's {what}")
                      for key, value, what in (("s3_access_key_id", self.s3_access_key_id, "access key"),
                                               ("s3_secret_access_key", self.s3_secret_access_key, "secret key"))
                      if value is None]
            found += [(("weight_caches", *path), why)
                      for path, why in upload_config_problems(self.weight_caches.s3, self.tuning_presets)]
        return found + adopted_bucket_problems(self.weight_caches) + upload_prefix_overlaps(self.weight_caches)


class WeightsRef(Model):
    """Where a service's versions read their model repositories."""

    claim_name: Optional[NameInput] = None
    """PersistentVolumeClaim of the file share in the service's namespace (versions with `modelRepository.cache: fileShare`)."""
    mount_path: str = "/models"
    """Where the file share is mounted in Triton's container."""
    s3_secret_name: Optional[NameInput] = None
    """Secret with the S3 credentials (AWS_* variables) in the service's namespace (versions with cache `s3`)."""
    s3_endpoint: Optional[TextInput] = None
    """S3 endpoint URL of the bucket."""
    s3_bucket: Optional[TextInput] = None
    """The bucket holding the model repositories."""


# What a version reading each cache needs to know from `WeightsRef`.
WEIGHTS_NEEDED = {"fileShare": ("claim_name",), "s3": ("s3_secret_name", "s3_endpoint", "s3_bucket")}


def missing_weights(weights: WeightsRef, repositories: Iterable[tuple[KeyPath, ModelRepository]]) -> list[tuple[KeyPath, str]]:
    """Model repositories (each with the key path of what reads it) whose cache `weights` does not name."""
    found = []
    for path, repository in repositories:
        missing = [key for key in WEIGHTS_NEEDED[repository.cache] if getattr(weights, key) is None]
        if missing:
            found.append((path + ("modelRepository", "cache"),
                          f"weight cache {repository.cache!r} needs weights.{', weights.'.join(missing)}"))
    return found

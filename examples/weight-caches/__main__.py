"""WeightCaches alone: an NFS share that already exists and an S3 bucket, made readable in the
namespaces whose Triton services will load model repositories from them.

Per namespace that reads the share: a PersistentVolume pre-bound to the claim `model-weights`.
Per namespace that reads the bucket: the Secret `model-weights-s3` with its credentials. The
bucket itself is created (versioned, old versions expiring). The caches and the namespaces come
from the stack's config (Pulumi.example.yaml).
"""

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.weights.caches import WeightCaches

config = pulumi.Config()
file_share_namespaces = config.get_object("fileShareNamespaces") or []
s3_namespaces = config.get_object("s3Namespaces") or []

# The cluster the kubeconfig's current context points at, or the context named in the stack's
# config (`pulumi config set kubeContext <name>`).
provider = k8s.Provider("cluster", context=config.get("kubeContext"))

# The readers' namespaces: the claims and Secrets go into them.
namespaces = [
    k8s.core.v1.Namespace(ns, metadata={"name": ns}, opts=pulumi.ResourceOptions(provider=provider))
    for ns in sorted({*file_share_namespaces, *s3_namespaces})
]

caches = WeightCaches(
    "weights",
    {
        "weight_caches": config.require_object("weightCaches"),
        "file_share_namespaces": file_share_namespaces,
        "s3_namespaces": s3_namespaces,
        # The bucket's credentials: secret config (`pulumi config set --secret s3AccessKeyId ...`);
        # the component keeps them as Pulumi secrets, in the state and in the Secrets it writes.
        "s3_access_key_id": config.require("s3AccessKeyId"),
        "s3_secret_access_key": config.require("s3SecretAccessKey"),
    },
    opts=pulumi.ResourceOptions(providers={"kubernetes": provider}, depends_on=namespaces),
)

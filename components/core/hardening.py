"""The deliberate exceptions to checkov's Kubernetes checks, in one place.

Every workload the platform renders passes checkov's Kubernetes checks except where a
check asks for something the platform refuses on purpose. Each such exception is
recorded here (check, the objects it covers, why) and rendered on those objects as
checkov's skip annotations, `checkov.io/skip<N>: <check>=<reason>` in the object's
`metadata.annotations` (checkov reads them there, and for the pod of a Deployment or
DaemonSet from its parent: checkov/kubernetes/kubernetes_utils.py get_skipped_checks and
graph_builder/local_graph.py, checkov 3.3.30). A new workload, or a known one that loses
a hardening, still fails: the test over the rendered stacks wants zero failed checks.
"""

from __future__ import annotations

from dataclasses import dataclass

SKIP_ANNOTATION_PREFIX = "checkov.io/skip"


@dataclass(frozen=True)
class Exemption:
    check: str
    """checkov check id (CKV_K8S_43)."""
    reason: str
    """Why the platform does not do what the check asks. checkov splits the annotation on
    `=`, so a reason holds none."""


@dataclass(frozen=True)
class Workload:
    objects: str
    """Which objects carry the exemptions, as a reader finds them."""
    exemptions: tuple[Exemption, ...]


_TAG_PINNED = ("pinned by tag, not digest: the stack file chooses each version's Triton image and "
               "versions.py the platform's own; a tag says which release runs and is what an upgrade edits")
_PAUSE_NO_PROBE = "runs only pause, which serves nothing a probe could ask; Kubernetes restarts it if it exits"

TRITON = "triton"
TRITON_NO_CPU_LIMIT = "triton-without-cpu-limit"
TRITON_S3 = "triton-s3"
PLACEHOLDER = "placeholder"
PREPULL = "prepull"
NODE_MARKER = "node-marker"
CLUSTER_AUTOSCALER = "cluster-autoscaler"
TUNING = "tuning"

# Triton core filesystem/api.cc LoadCredentials: without TRITON_CLOUD_CREDENTIAL_PATH it takes S3
# credentials from the environment; the credential file is the other route, which Triton's docs
# (model_repository.md, "Cloud Storage with Credential file") mark Beta, so the stable one is used.
_S3_CREDENTIALS = ("Triton reads AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY from its environment (triton core "
                   "s3.h, filesystem/api.cc); the other route, a credential file named by "
                   "TRITON_CLOUD_CREDENTIAL_PATH, is marked Beta in Triton's docs, so the stable one is used")

WORKLOADS: dict[str, Workload] = {
    TRITON: Workload("Triton Deployments (`<service>-<version>`)", (
        Exemption("CKV_K8S_43", f"Triton image {_TAG_PINNED}"),
        Exemption("CKV_K8S_15", "IfNotPresent on purpose: the image is pre-pulled onto GPU nodes while the "
                                "driver installs; Always would ask the registry at every start and slow cold starts"),
        Exemption("CKV_K8S_40", "tritonserver images run as their triton-server user (uid 1000) that owns the "
                                "server files; no user above 10000 exists in the image"),
        Exemption("CKV_K8S_35", "Triton takes the admin key that closes its control APIs only on its command line, "
                                "which Kubernetes fills from an environment variable ($(TRITON_ADMIN_KEY)); on the S3 "
                                f"cache {_S3_CREDENTIALS}. Both come from Secrets, never literals"),
    )),
    TRITON_NO_CPU_LIMIT: Workload("Triton Deployments of versions without `resources.cpuLimit`", (
        Exemption("CKV_K8S_11", "no CPU limit on GPU pods on purpose: CFS throttling stalls feeding the GPU and "
                                "adds latency; the request reserves the CPU and resources.cpuLimit sets a limit"),
    )),
    TRITON_S3: Workload("Model Analyzer Jobs of versions reading their model repository from the S3 cache", (
        Exemption("CKV_K8S_35", f"on the S3 cache {_S3_CREDENTIALS}; they come from the weights Secret, never literals"),
    )),
    TUNING: Workload("Model Analyzer Jobs of versions with `tuning` (`tune-<service>-<version>-<run>`)", (
        Exemption("CKV_K8S_43", f"Triton, Triton SDK and rclone images {_TAG_PINNED}"),
        Exemption("CKV_K8S_40", "every step runs as uid 1000, the tritonserver images' triton-server user that "
                                "owns the server files; no user above 10000 exists in those images"),
        Exemption("CKV_K8S_15", "IfNotPresent on purpose: the version's Triton image is already on the GPU nodes "
                                "(pre-pulled) and the tag-pinned SDK image is many gigabytes; Always would ask the "
                                "registry at every start of the run's pod"),
    )),
    PLACEHOLDER: Workload("spare-capacity placeholder Deployments in `gpu-coldstart`", (
        Exemption("CKV_K8S_43", f"pause image {_TAG_PINNED}"),
        Exemption("CKV_K8S_15", "a tag-pinned image already on the node; Always adds a registry round trip to "
                                "every start of a slot"),
        Exemption("CKV_K8S_8", _PAUSE_NO_PROBE),
        Exemption("CKV_K8S_9", _PAUSE_NO_PROBE),
    )),
    PREPULL: Workload("image pre-pull DaemonSets in `gpu-coldstart`", (
        Exemption("CKV_K8S_43", f"the pulled Triton images and pause are {_TAG_PINNED}"),
        Exemption("CKV_K8S_15", "IfNotPresent is the point: each node pulls an image once and keeps it for the "
                                "Triton replicas; Always would pull again at every restart"),
        Exemption("CKV_K8S_8", _PAUSE_NO_PROBE),
        Exemption("CKV_K8S_9", _PAUSE_NO_PROBE),
    )),
    NODE_MARKER: Workload("node-group marker DaemonSets in `gpu-operator`", (
        Exemption("CKV_K8S_43", f"busybox and pause images {_TAG_PINNED}"),
        Exemption("CKV_K8S_15", "a tag-pinned image already on the node; Always would make labelling a new node "
                                "wait on the registry"),
        Exemption("CKV_K8S_8", _PAUSE_NO_PROBE),
        Exemption("CKV_K8S_9", _PAUSE_NO_PROBE),
    )),
    CLUSTER_AUTOSCALER: Workload("the node-group cluster autoscaler Deployment in `kube-system` (Heat clusters)", (
        Exemption("CKV_K8S_43", f"cluster-autoscaler image {_TAG_PINNED}"),
        Exemption("CKV_K8S_15", "a tag-pinned image; Always would make a restart on the control plane wait on "
                                "the registry"),
        Exemption("CKV_K8S_38", "the autoscaler watches pods and nodes and evicts pods through the Kubernetes "
                                "API: it needs its service-account token"),
        Exemption("CKV_K8S_11", "no CPU limit: throttling slows the scale-up simulation when many pods turn "
                                "pending at once; the request reserves its share and memory is limited"),
    )),
}


def exemptions(*workloads: str) -> list[Exemption]:
    """The exemptions of the given workloads, in order."""
    return [e for w in workloads for e in WORKLOADS[w].exemptions]


def skip_annotations(*workloads: str) -> dict[str, str]:
    """checkov's skip annotations for an object that is all of the given workloads."""
    return {f"{SKIP_ANNOTATION_PREFIX}{i}": f"{e.check}={e.reason}"
            for i, e in enumerate(exemptions(*workloads), start=1)}


def triton_workloads(cpu_limit: bool) -> tuple[str, ...]:
    """What a Triton Deployment is exempt as: always Triton (its secrets from the environment,
    the S3 credentials among them), plus per its CPU limit."""
    return (TRITON,) + (() if cpu_limit else (TRITON_NO_CPU_LIMIT,))


def tuning_workloads(version) -> tuple[str, ...]:
    """What a version's tuning Job is exempt as: its Triton server is the version's, with the
    version's CPU limit and S3 credentials (and no admin key: triton_server.analysis_server)."""
    return ((TUNING,) + triton_workloads(bool(version.resources.cpu_limit))[1:]
            + ((TRITON_S3,) if version.model_repository.cache == "s3" else ()))


def reference() -> str:
    """The table of recorded exceptions in docs/policies.md."""
    rows = ["| check | objects | reason |", "|---|---|---|"]
    for workload in WORKLOADS.values():
        for e in workload.exemptions:
            rows.append(f"| `{e.check}` | {workload.objects} | {e.reason.replace('|', '/')} |")
    return "\n".join(rows) + "\n"

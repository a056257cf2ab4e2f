"""`training`: Kubeflow Trainer runtimes and the teams' TrainJobs, with their checks.

Trainer's own rules, read in kubeflow/trainer v2.3.0, are refused here before apply:
- pkg/runtime/framework/plugins/torch/torch.go Validate: the job's env must not hold
  constants.TorchRunReservedEnvNames (PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK,
  PET_MASTER_ADDR, PET_MASTER_PORT); torchrun (torch/distributed/argparse_util.py `env`)
  also reads every other `PET_<FLAG>` as its own flag, so the platform refuses the whole prefix:
  the launcher is configured by Trainer and the runtime alone.
- pkg/apis/trainer/v1alpha1/trainjob_types.go: env at most 128 items, command at most 128,
  activeDeadlineSeconds at least 1, storageUri `scheme://...` of at most 2048 characters.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from typing import Annotated, Literal, Optional

from pydantic import AfterValidator, Field

from inference_platform.core import grammar
from inference_platform.settings.base import DnsLabel, Image, Model, Quantity, RelativePath, ShortName
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.serving import GpuRequest
from inference_platform.settings.training_publish import PublishTo, publish_section_problems
from inference_platform.settings.training_teams import TopologyLevels, TrainingTeam

RUNTIME_KINDS = ("torch-ddp", "torch-fsdp", "torch-fsdp-tp", "lightning")
RuntimeKind = Literal["torch-ddp", "torch-fsdp", "torch-fsdp-tp", "lightning"]
SHARDED_KINDS = frozenset({"torch-fsdp", "torch-fsdp-tp"})

# Environment the platform sets on a job's node container (components/training/jobs.py); a job's
# own env may not set these, nor Trainer's PET_* (see the module docstring).
STRATEGY_ENV = "PLATFORM_TRAIN_STRATEGY"
SHARD_DEGREE_ENV = "PLATFORM_SHARD_DEGREE"
TP_DEGREE_ENV = "PLATFORM_TP_DEGREE"
CHECKPOINT_DIR_ENV = "PLATFORM_CHECKPOINT_DIR"
# Where a job's node pods find what the platform mounts: /workspace/<key> from the job's key of that name
# (the file share's claim; Trainer's initializers write /workspace/dataset and /workspace/model from S3).
WORKSPACE = "/workspace"
WORKSPACE_KEYS = ("code", "dataset", "model", "checkpoint")
DATA_KEYS = ("dataset", "model", "checkpoint")
# A path under /workspace inside a command word (also inside `--flag=...` and `bash -c "..."`); what
# runs: the command's first word, or a word's path ending in a script suffix.
_WORKSPACE_PATH = re.compile(r"(?<![\w./-])/workspace(?![\w.-])[^\s'\"`;|&<>(){}$,=:]*")
SCRIPT_SUFFIXES = (".py", ".sh")
RESERVED_ENV_PREFIXES = ("PET_", "PLATFORM_")
# NVIDIA NCCL user guide, Environment Variables (env.html): System configuration.
NCCL_SOCKET_IFNAME = "NCCL_SOCKET_IFNAME"
NCCL_IB_DISABLE = "NCCL_IB_DISABLE"
NCCL_IB_HCA = "NCCL_IB_HCA"

# A Kubernetes env var name as the API accepts it (k8s.io/apimachinery validation
# IsEnvVarName: [-._a-zA-Z][-._a-zA-Z0-9]*); the platform keeps to the portable C identifier.
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
# NCCL_SOCKET_IFNAME (NVIDIA/nccl docs/userguide/source/env.rst; src/os/linux.cc ncclOsFindInterfaces,
# src/misc/utils.cc parseStringList and matchIf): a comma-separated list of interface-name prefixes; a
# leading `^` excludes what the list matches, then a leading `=` makes every item of the list an exact
# name (`^=docker0`, `=eth0,eth1`). An item's own `=` is part of its name, `:` starts a port, and a Linux
# interface name is at most 15 characters without `/`, `:` or blanks; NCCL keeps at most 16 items.
_IFNAMES = re.compile(r"\^?=?[A-Za-z0-9_.-]{1,15}(,[A-Za-z0-9_.-]{1,15}){0,15}")
# The interfaces of a pod on the pod network: the loopback and the one the container runtime names
# for the CNI (containerd internal/cri/server/helpers.go defaultIfName = "eth0"). The platform attaches
# no secondary network (no Multus annotation, no hostNetwork, which Pod Security restricted forbids).
POD_INTERFACE = "eth0"
LOOPBACK = "lo"


def nccl_selects(ifname_list: str, interface: str) -> bool:
    """Whether NCCL, with NCCL_SOCKET_IFNAME=`ifname_list`, uses `interface` (ncclOsFindInterfaces:
    `matchIfList(name, ..., searchExact) ^ searchNot`; a prefix matches a name it begins, an exact item
    only the same name)."""
    rest = ifname_list
    exclude = rest.startswith("^")
    rest = rest[1:] if exclude else rest
    exact = rest.startswith("=")
    rest = rest[1:] if exact else rest
    items = [i for i in rest.split(",") if i]
    matched = not items or any(interface == i if exact else interface.startswith(i) for i in items)
    return matched != exclude


def socket_ifname(value: str) -> str:
    """An NCCL_SOCKET_IFNAME a training pod can satisfy: NCCL treats a set list as find-or-fail
    (src/misc/socket.cc ncclFindInterfaces, "Specified by user : find or fail"; src/bootstrap.cc then
    "Bootstrap : no socket interface found"), and its bootstrap takes the first interface the list
    selects, in getifaddrs order, where the loopback comes first."""
    if not _IFNAMES.fullmatch(value):
        raise ValueError(f"{value[:40]!r} is not an NCCL interface list; allowed: an optional ^ (exclude), then an "
                         "optional = (exact names), then comma-separated names of at most 15 letters, digits, '_', '.' "
                         "or '-', such as =eth0 or ^lo,docker")
    if not nccl_selects(value, POD_INTERFACE):
        raise ValueError(f"{value!r} selects no interface a training pod has: the pods are on the pod network, with "
                         f"{LOOPBACK} and {POD_INTERFACE} only (the platform attaches no secondary network), and NCCL "
                         f"fails when the list matches nothing; allowed: a list that selects {POD_INTERFACE} and not "
                         f"{LOOPBACK}, such as ={POD_INTERFACE} or ^lo,docker, or leave it unset (NCCL then picks {POD_INTERFACE})")
    if nccl_selects(value, LOOPBACK):
        raise ValueError(f"{value!r} also selects {LOOPBACK}, the loopback, which NCCL's bootstrap may take (it lists "
                         f"first) and no other pod reaches; allowed: a list that selects {POD_INTERFACE} and not "
                         f"{LOOPBACK}, such as ={POD_INTERFACE} or ^lo,docker")
    return value


def _no_rdma_device(value: str) -> str:
    raise ValueError(f"{value!r} names RDMA devices, but the platform gives training pods none: no secondary network, "
                     "no RDMA device resource (rdma/* from a device plugin), and Pod Security restricted forbids the "
                     "IPC_LOCK capability verbs need to pin memory; NCCL runs its socket transport over the pod network; "
                     "allowed: leave it unset (ibDisable: true skips NCCL's search for InfiniBand devices)")


def _env_name(value: str) -> str:
    if not _ENV_NAME.fullmatch(value):
        raise ValueError(f"{value!r} is not an environment variable name (a letter or '_', then letters, digits, '_'; at most 128)")
    if value.startswith(RESERVED_ENV_PREFIXES):
        raise ValueError(f"{value!r} is reserved: Trainer and torchrun own PET_*, the platform PLATFORM_*; "
                         "set nodes, processesPerNode and the degrees instead")
    return value


def _command_word(value: str) -> str:
    # trainjob_types.go: items of at most 1 MiB; the platform keeps a word to 4096 printable characters.
    if not value or len(value) > 4096 or grammar.CONTROL.search(value.replace("\n", "")):
        raise ValueError(f"{value[:40]!r} is not a command word (1-4096 characters, no control characters but newline)")
    return value


EnvName = Annotated[str, AfterValidator(_env_name)]
CommandWord = Annotated[str, AfterValidator(_command_word)]
EnvValue = Annotated[str, AfterValidator(grammar.annotation_value)]


SocketIfname = Annotated[str, AfterValidator(socket_ifname)]


class GroupNetwork(Model):
    socket_ifname: Optional[SocketIfname] = None
    """NCCL_SOCKET_IFNAME on the group's training pods: the interfaces NCCL's socket transport and bootstrap use, as prefixes (`eth`), exact names (`=eth0`) or exclusions (`^lo,docker`). The pods have `lo` and `eth0` only (the platform attaches no secondary network), so the list must select `eth0` and not `lo`; default: NCCL's own choice, which is `eth0`."""
    ib_disable: bool = False
    """NCCL_IB_DISABLE=1: NCCL does not look for InfiniBand/RoCE devices (training pods have none)."""
    ib_hca: Optional[Annotated[str, AfterValidator(_no_rdma_device)]] = None
    """NCCL_IB_HCA: refused. It names RDMA devices, and the platform gives training pods none (no secondary network, no RDMA device resource, no IPC_LOCK under Pod Security restricted): NCCL runs over the pod network (docs/training.md: NCCL's network)."""

    def env(self) -> dict[str, str]:
        """The NCCL variables these settings stand for."""
        out: dict[str, str] = {}
        if self.socket_ifname is not None:
            out[NCCL_SOCKET_IFNAME] = self.socket_ifname
        if self.ib_disable:
            out[NCCL_IB_DISABLE] = "1"
        if self.ib_hca is not None:
            out[NCCL_IB_HCA] = self.ib_hca
        return out


class DataLoader(Model):
    image: Image
    """Image of the CPU data-loader pods (they pre-process and feed the GPU nodes)."""
    command: list[CommandWord] = Field(min_length=1, max_length=128)
    """Entry point of the data-loader container."""
    replicas: int = Field(default=1, ge=1, le=64)
    """Data-loader pods per TrainJob."""
    cpu: Quantity = "4"
    """CPU request (and limit) of each data-loader pod."""
    memory: Quantity = "16Gi"
    """Memory request (and limit) of each data-loader pod."""


class TrainingRuntimeSettings(Model):
    kind: RuntimeKind
    """Strategy: `torch-ddp`, `torch-fsdp` (full or hybrid shard), `torch-fsdp-tp` (2-D mesh: shard x tensor parallel) or `lightning`; the ClusterTrainingRuntime is `ip-<kind>`."""
    shm_size: Quantity = "8Gi"
    """Size of the memory-backed /dev/shm of each node pod (PyTorch DataLoader workers and NCCL's shared-memory transport use it); counted against the pod's memory."""
    run_as_user: int = Field(default=1000, ge=1, le=2147483647)
    """UID the node containers run as (the namespace enforces Pod Security `restricted`: never root)."""
    initializer_volume: Quantity = "100Gi"
    """Size of the ReadWriteMany claim a job's Trainer initializers download an S3 dataset or model into (one per job, deleted with it); the cluster's default StorageClass must offer ReadWriteMany."""
    data_loader: Optional[DataLoader] = None
    """A CPU replicated job `data-loader` beside the GPU `node` job, on CPU nodes (the system group)."""
    max_restarts: int = Field(default=3, ge=0, le=100)
    """Restarts of a job's JobSet after a failure (a rank's crash, a failed initializer), every pod again, before the job fails for good; a node pod disrupted by the scheduler's preemption for serving or a node's drain restarts it without counting (docs/training.md: When a job is preempted)."""


def _default_runtimes() -> list[TrainingRuntimeSettings]:
    return [TrainingRuntimeSettings(kind=k) for k in RUNTIME_KINDS]


class CachePath(Model):
    cache: Literal["fileShare", "s3"]
    """Weight cache holding it: `s3` (read by Trainer's initializer, s3://<bucket>/<path>) or `fileShare` (the team namespace's claim, mounted)."""
    path: RelativePath
    """Path inside the file share, or key prefix inside the bucket."""


class TrainJobSettings(Model):
    name: Annotated[str, AfterValidator(lambda v: grammar.dns_label(v, 40))]
    """TrainJob name (DNS label, at most 40: Trainer names the pods `<name>-node-<i>-<j>` and the rendezvous host `<name>-node-0-0.<name>`)."""
    team: ShortName
    """The team (`training.teams[].name`) whose namespace and Kueue LocalQueue the job uses."""
    runtime: RuntimeKind
    """Runtime kind (`training.runtimes[].kind`)."""
    image: Image
    """Training image (PyTorch, with torchrun; Lightning for `lightning`)."""
    command: list[CommandWord] = Field(min_length=1, max_length=128)
    """Entry point of the node container, e.g. `[torchrun, train.py]`: torchrun takes its rendezvous from Trainer's PET_* variables, so give it no --nnodes/--nproc-per-node/--master-addr."""
    env: dict[EnvName, EnvValue] = Field(default={}, max_length=100)
    """Extra environment of the node container; PET_* and PLATFORM_* are refused (Trainer and the platform set them)."""
    secret_env: dict[EnvName, Annotated[str, AfterValidator(lambda v: grammar.dns_label(v, 63))]] = Field(default={}, max_length=28)
    """Environment of the node container from the stack's secrets: variable name -> a name of `trainingSecrets`. The value reaches the pods only through a Secret of the job's namespace (`valueFrom.secretKeyRef`), never in the TrainJob's spec (docs/training.md: Secrets in a job's environment); a `secure:` value in `env` is refused."""
    nodes: int = Field(default=1, ge=1, le=1000)
    """Training nodes (pods of the `node` job), one per GPU node at most."""
    processes_per_node: Optional[int] = Field(default=None, ge=1, le=16)
    """torchrun processes per node (PET_NPROC_PER_NODE); default and most: the GPUs of `gpu.count`, one per GPU."""
    gpu: GpuRequest
    """GPU group (`cluster.nodeGroups[].name`) and share per node: whole GPUs (`count`), or a MIG slice (`migProfile`) on a group with MIG strategy `mixed`."""
    cpu: Quantity = "8"
    """CPU request per node pod."""
    memory: Quantity = "64Gi"
    """Memory request (and limit) per node pod, /dev/shm included."""
    hybrid_shard_degree: Optional[int] = Field(default=None, ge=1, le=16000)
    """FSDP only: ranks in one shard group (PLATFORM_SHARD_DEGREE; the replicate dimension is the rest). Absent: full shard over all ranks. Must divide nodes x processesPerNode (divided by tensorParallelDegree with `torch-fsdp-tp`)."""
    tensor_parallel_degree: Optional[int] = Field(default=None, ge=2, le=16)
    """`torch-fsdp-tp` only, required: ranks in one tensor-parallel group (PLATFORM_TP_DEGREE), within a node: divides processesPerNode."""
    code: Optional[CachePath] = None
    """The job's code: a directory of the file share, mounted read-only at /workspace/code in the node pods (cache `fileShare` only), e.g. `{cache: fileShare, path: code/resnet}` with `command: [torchrun, /workspace/code/train.py]`. Copy the code there before the job starts (docs/training.md: The job's code); a command naming /workspace/code needs it."""
    dataset: Optional[CachePath] = None
    """Dataset in a weight cache, at /workspace/dataset in the node pods."""
    model: Optional[CachePath] = None
    """Pre-trained model in a weight cache, at /workspace/model in the node pods."""
    checkpoint: Optional[CachePath] = None
    """Where the job writes its checkpoints (PLATFORM_CHECKPOINT_DIR): a directory of the file share's claim (cache `fileShare` only: the node pods mount it read-write)."""
    active_deadline_seconds: Optional[int] = Field(default=None, ge=1, le=31_536_000)
    """Seconds the job may run (from its start, reset on resume) before Trainer fails it."""
    restart_on_edit: bool = False
    """Accept, in a production stack, edits that kill this job while it runs: one that replaces its TrainJob (its own keys, its group's `networks`, selector and taints, its claim) or one of its runtime's containers, which makes Kueue evict it; the job starts again, from its last checkpoint if its code reads one. Without it `platformctl diff` refuses such an edit of a production stack (docs/training.md: Edits that restart a job); other stacks get a note."""
    priority: Literal["training", "training-urgent"] = "training"
    """Kueue WorkloadPriorityClass of the job (label `kueue.x-k8s.io/priority-class`): the order of the team's pending jobs, and with the team's `preemption.withinClusterQueue: LowerPriority` a `training-urgent` job preempts the team's own `training` jobs. Every job gets one, so no job outranks the others by accident."""
    suspend: bool = False
    """Refused when true: under Kueue it holds nothing (Kueue lifts `suspend` from every job it admits) and setting it on a running job deletes its pods, which restart from the beginning once Kueue lifts it. To hold a job, leave it out of `training.jobs` until it should run (docs/training.md: Holding a job). Kept so that `false` parses."""
    publish_to: Optional[PublishTo] = None
    """When the job's nodes complete, start the model pipeline of this service (export -> TensorRT -> analyse -> publish -> canary patch) with the ONNX file the job wrote in its checkpoint directory (docs/training.md: From a trained model to a canary). Needs `checkpoint`; adding, removing or changing `service` replaces the TrainJob."""

    @property
    def s3_initializers(self) -> tuple[str, ...]:
        """The Trainer initializers the job needs: the dataset and model it reads from the S3 cache."""
        return tuple(w for w in ("dataset", "model") if getattr(self, w) is not None and getattr(self, w).cache == "s3")

    @property
    def processes(self) -> int:
        return self.processes_per_node or self.gpu.count

    @property
    def world_size(self) -> int:
        return self.nodes * self.processes


class TrainingSettings(Model):
    teams: list[TrainingTeam] = Field(default=[], max_length=50)
    """Teams that train on the GPU groups: their namespaces, Kueue queues and guaranteed GPUs."""
    runtimes: list[TrainingRuntimeSettings] = Field(default_factory=_default_runtimes, max_length=4)
    """ClusterTrainingRuntimes, one per kind (default: the four kinds with default settings)."""
    jobs: list[TrainJobSettings] = Field(default=[], max_length=200)
    """TrainJobs, each of a team, on a runtime and a GPU group."""
    networks: dict[DnsLabel, GroupNetwork] = {}
    """Per GPU group (`cluster.nodeGroups[].name`), the NCCL settings of its nodes' network, set on every TrainJob placed there."""
    topology_levels: TopologyLevels = []
    """Node labels of the cluster's network topology, widest first (e.g. `topology.kubernetes.io/zone`, then `kubernetes.io/hostname`): every GPU group's flavor becomes topology-aware, and Kueue admits a job only onto GPU nodes that exist, are ready and carry every level's label. Refused while a GPU group autoscales (minNodes < maxNodes): nothing asks the autoscaler for nodes then (docs/training-quotas.md). Empty (default): quota-only admission."""

    def runtime(self, kind: str) -> Optional[TrainingRuntimeSettings]:
        return next((r for r in self.runtimes if r.kind == kind), None)

    def team(self, name: str) -> Optional[TrainingTeam]:
        return next((t for t in self.teams if t.name == name), None)


def checkpoint_claim(job: TrainJobSettings) -> str:
    """The claim of a job's checkpoint directory in its team's namespace, rooted at that directory
    (weights/caches.py): named after the path too, so a new path is a new claim and the job, whose
    runtimePatches name it, is replaced rather than its claim deleted under its pods."""
    digest = hashlib.sha256(job.checkpoint.path.strip("/").encode()).hexdigest()[:8]
    return f"{job.name}-checkpoint-{digest}"


def _inside(a: str, b: str) -> bool:
    """Whether share path `a` is `b` or below it, or above it (one contains the other)."""
    a, b = posixpath.normpath(a.strip("/")), posixpath.normpath(b.strip("/"))
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def checkpoint_path_problems(settings) -> list[tuple[KeyPath, str]]:
    """Checkpoint directories are the only place teams write the share: each is apart from every
    other job's and from every model repository serving reads or a pipeline publishes into."""
    training = settings.training
    found: list[tuple[KeyPath, str]] = []
    serving = [(f"services[{svc.name}].versions[{v.name}].modelRepository.path", v.model_repository.path)
               for svc in settings.services for v in svc.versions if v.model_repository.cache == "fileShare"]
    serving += [(f"services[{svc.name}].pipeline.repositoryPrefix", svc.pipeline.repository_prefix)
                for svc in settings.services if svc.pipeline is not None]
    jobs = [(i, j) for i, j in enumerate(training.jobs) if j.checkpoint is not None and j.checkpoint.cache == "fileShare"]
    for n, (i, job) in enumerate(jobs):
        at: KeyPath = ("training", "jobs", i, "checkpoint", "path")
        path = job.checkpoint.path
        clash = next((f"job {other.name!r}'s checkpoint directory {other.checkpoint.path!r}" for _, other in jobs[:n]
                      if _inside(path, other.checkpoint.path)), None)
        clash = clash or next((f"{key} {where!r}" for key, where in serving if _inside(path, where)), None)
        if clash:
            found.append((at, f"{path!r} overlaps {clash}: a job writes its checkpoint directory, so it may not hold "
                              "or lie inside another job's or a model repository; allowed: a directory of its own, "
                              "apart from every other checkpoint directory and model repository"))
    return found


def runtime_name(kind: str) -> str:
    """The ClusterTrainingRuntime of a kind."""
    return f"ip-{kind}"


def nccl_env_problems(env: dict[str, str]) -> list[tuple[str, str]]:
    """A job's own NCCL_SOCKET_IFNAME and NCCL_IB_HCA, held to the rules of `training.networks`."""
    found = []
    for name, check in ((NCCL_SOCKET_IFNAME, socket_ifname), (NCCL_IB_HCA, _no_rdma_device)):
        if name in env:
            try:
                check(env[name])
            except ValueError as err:
                found.append((name, str(err)))
    return found


def _duplicates(items: list, key) -> list[int]:
    seen: set = set()
    out = []
    for i, item in enumerate(items):
        k = key(item)
        if k in seen:
            out.append(i)
        seen.add(k)
    return out


def mesh_problems(job: TrainJobSettings) -> list[tuple[KeyPath, str]]:
    """The job's degrees against its runtime kind and world size (nodes x processesPerNode)."""
    found: list[tuple[KeyPath, str]] = []
    world = job.world_size
    if job.hybrid_shard_degree is not None and job.runtime not in SHARDED_KINDS:
        found.append((("hybridShardDegree",), f"applies to torch-fsdp and torch-fsdp-tp only, runtime is {job.runtime}"))
    if job.runtime == "torch-fsdp-tp":
        tp = job.tensor_parallel_degree
        if tp is None:
            found.append((("tensorParallelDegree",), "required with runtime torch-fsdp-tp (ranks in one tensor-parallel group, 2-16)"))
        elif job.processes % tp:
            found.append((("tensorParallelDegree",), f"{tp} does not divide processesPerNode {job.processes}; "
                                                     "allowed: a divisor of it (tensor parallelism stays within a node)"))
        elif job.hybrid_shard_degree is not None and (world // tp) % job.hybrid_shard_degree:
            found.append((("hybridShardDegree",), f"{job.hybrid_shard_degree} does not divide the data-parallel size "
                                                  f"{world // tp} (nodes {job.nodes} x processesPerNode {job.processes} / tensorParallelDegree {tp})"))
    else:
        if job.tensor_parallel_degree is not None:
            found.append((("tensorParallelDegree",), f"applies to torch-fsdp-tp only, runtime is {job.runtime}"))
        if job.hybrid_shard_degree is not None and job.runtime == "torch-fsdp" and world % job.hybrid_shard_degree:
            found.append((("hybridShardDegree",), f"{job.hybrid_shard_degree} does not divide the world size {world} "
                                                  f"(nodes {job.nodes} x processesPerNode {job.processes})"))
    return found


def topology_problems(training: TrainingSettings, node_groups: list[NodeGroup]) -> list[tuple[KeyPath, str]]:
    """topologyLevels makes every GPU group's ResourceFlavor topology-aware (training/kueue.py), so
    every team queue is TAS-only and Kueue 0.19.2 implies TAS for every job
    (pkg/scheduler/flavorassigner/tas_flavorassigner.go isTASImplied). TAS counts only the nodes that
    exist, are ready and carry every level label (site/.../topology_aware_scheduling.md "Capacity
    calculation", pkg/util/tas/node.go NodeMatchesFlavor), and works with the cluster autoscaler only
    through a ProvisioningRequest admission check ("ClusterAutoscaler support"), which the platform
    does not declare: a job is never admitted beyond the nodes of the moment, and as it has no pods
    until admitted, nothing makes the autoscaler add one."""
    if not training.topology_levels:
        return []
    scaling = [g for g in node_groups if g.gpu is not None and g.min_nodes < g.max_nodes]
    if not scaling:
        return []
    names = ", ".join(f"{g.name} (minNodes {g.min_nodes} < maxNodes {g.max_nodes})" for g in scaling)
    return [(("topologyLevels",), f"makes Kueue admit a job only onto GPU nodes that exist already, and the GPU groups "
             f"{names} autoscale: no ProvisioningRequest admission check asks the autoscaler for nodes, and a job waiting "
             f"for admission has no pods that would, so a job larger than the free room of the nodes of the moment is "
             f"never admitted; allowed: topologyLevels only when every GPU group has minNodes equal to maxNodes, "
             f"or none (quota admission, whose pending pods the autoscaler serves)")]


# Kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go:801-813 skips every resource the
# ClusterQueue does not declare (quotaCheckStrategy IgnoreUndeclared; the team queues declare the GPU
# resources only, training/kueue.py), so a pod set that requests only CPU and memory gets no flavor;
# :835-851 then returns the assignment at once, before the pod sets after it and before the topology
# step (:860). The data loaders and the publish step follow the node pods (training/runtimes.py
# runtime_spec), each a pod set of CPU and memory.
UNDECLARED_ONLY = "requests only CPU and memory, which the team queues do not declare, and Kueue 0.19.2 ends a job's flavor assignment at such a pod set"


def undeclared_podset_problems(job: TrainJobSettings, runtime: TrainingRuntimeSettings,
                               topology: bool) -> list[tuple[KeyPath, str]]:
    """The job's CPU-only pod sets against Kueue's flavor assignment: with two, the second gets no
    assignment, and the Workload's CRD refuses an admission with fewer pod set assignments than pod
    sets (apis/kueue/v1beta2/workload_types.go "podSetAssignments must have the same number of podSets
    as the spec"), so the job is never admitted; with topology levels, one makes Kueue admit the node
    pods with no topology placement."""
    cpu_only = ([(("runtime",), f"runtime {job.runtime}'s data loader (training.runtimes[].dataLoader)")]
                if runtime.data_loader is not None else []) + (
        [(("publishTo",), "its publish step")] if job.publish_to is not None else [])
    if len(cpu_only) > 1:
        return [(("publishTo",), f"{cpu_only[0][1]} {UNDECLARED_ONLY}, so its publish step after it gets no "
                                 f"assignment and the job is never admitted; allowed: publishTo on a job whose runtime "
                                 f"has no dataLoader")]
    if cpu_only and topology:
        key, what = cpu_only[0]
        return [(key, f"{what} {UNDECLARED_ONLY}, before the topology step, so the node pods would be admitted with "
                      f"no topology placement (training.topologyLevels); allowed: no topologyLevels, or a job without "
                      f"publishTo on a runtime without dataLoader")]
    return []


def command_problems(job: TrainJobSettings) -> list[tuple[KeyPath, str]]:
    """The paths under /workspace the job's command names, against what the job mounts there:
    /workspace/code comes only from `code`, /workspace/<dataset|model|checkpoint> only from those keys
    and holds data, never code; with S3 initializers their volume covers the image's /workspace."""
    found: list[tuple[KeyPath, str]] = []
    for k, word in enumerate(job.command):
        for match in _WORKSPACE_PATH.finditer(word):
            path = posixpath.normpath(match.group())
            if path != WORKSPACE and not path.startswith(WORKSPACE + "/"):
                continue
            top = path.split("/")[2] if path != WORKSPACE else ""
            runs = k == 0 or path.endswith(SCRIPT_SUFFIXES)
            why = None
            if top in WORKSPACE_KEYS and getattr(job, top) is None:
                why = (f"names {path}, but the job has no `{top}`, the only thing the platform mounts at {WORKSPACE}/{top}; "
                       f"allowed: set {top}: {{cache: fileShare, path: <directory>}}" + (
                           " holding the code (docs/training.md: The job's code), or run a script of the image outside "
                           f"{WORKSPACE}" if top == "code" else ""))
            elif top in DATA_KEYS and runs:
                why = (f"runs {path}, but {WORKSPACE}/{top} holds the job's {top}, not its code; allowed: the code from "
                       f"`code`, run as {WORKSPACE}/code/<file>, or a script of the image outside {WORKSPACE}")
            elif top not in WORKSPACE_KEYS and runs and job.s3_initializers:
                why = (f"runs {path}, but the job reads its {' and '.join(job.s3_initializers)} from S3, so Trainer's "
                       f"initializers mount their volume over {WORKSPACE} and the image's files there are hidden; "
                       f"allowed: the code from `code`, run as {WORKSPACE}/code/<file>, or a script outside {WORKSPACE}")
            if why:
                found.append((("command", k), why))
                break
    return found


def job_placement_problems(job: TrainJobSettings, groups: dict[str, NodeGroup]) -> list[tuple[KeyPath, str]]:
    """The job's GPU group exists and has GPUs whole or as MIG slices, and the job names a slice where the group's are by profile."""
    group = groups.get(job.gpu.group)
    if group is None or group.gpu is None:
        gpu_names = ", ".join(sorted(g for g, ng in groups.items() if ng.gpu is not None)) or "none"
        return [(("gpu", "group"), f"no GPU node group {job.gpu.group!r}; GPU groups: {gpu_names}")]
    sharing = group.gpu.sharing
    found: list[tuple[KeyPath, str]] = []
    if sharing.mode in ("time-slicing", "mps"):
        found.append((("gpu", "group"), f"group {group.name!r} shares GPUs by {sharing.mode}; training needs whole GPUs or MIG slices"))
    mixed = sharing.mode == "mig" and sharing.effective_mig_strategy == "mixed"
    if mixed and job.gpu.mig_profile is None:
        found.append((("gpu", "migProfile"), f"group {group.name!r} has MIG strategy mixed: name the slice's profile"))
    if not mixed and job.gpu.mig_profile is not None:
        found.append((("gpu", "migProfile"), f"group {group.name!r} advertises no MIG slices by profile (MIG strategy mixed only)"))
    if job.processes_per_node is not None and job.processes_per_node > job.gpu.count:
        found.append((("processesPerNode",), f"{job.processes_per_node} processes but {job.gpu.count} GPUs per node pod; "
                                             "allowed: at most one process per GPU"))
    # The slice existing, a pod's units on one node and the pods on maxNodes: training/capacity.py
    # job_shape_problems, with the group's MIG layout checked.
    return found


# Kueue v0.19.2 pkg/controller/jobframework/reconciler.go (step 7, "handle job is suspended"):
# a suspended job whose workload is admitted is started, i.e. unsuspended; Kueue admits a
# suspended TrainJob's workload like any other. Trainer v2.3.0 pkg/runtime/framework/plugins/jobset
# jobset.go Build passes `suspend` to the JobSet, which deletes the running Jobs' pods.
SUSPEND_REFUSED = ("holds nothing under Kueue: Kueue lifts suspend from every job it admits, and on a running job it "
                   "deletes the pods, which then start over from the beginning; allowed: false (to hold a job, leave it "
                   "out of training.jobs until it should run)")


def training_problems(training: TrainingSettings, node_groups: list[NodeGroup],
                      serving_namespaces: frozenset[str] = frozenset(),
                      caches: Optional[frozenset[str]] = None) -> list[tuple[KeyPath, str]]:
    """Every problem of the `training` section, paths below it: names unique, each job's team,
    runtime, GPU placement, mesh and caches (`caches`: the weight caches the stack has, None: not
    known here); a team namespace not shared with a service (its pods would get Istio's sidecar,
    which never exits and so never lets a Job complete)."""
    found: list[tuple[KeyPath, str]] = []
    found += [(("teams", i, "name"), "a second team of this name") for i in _duplicates(training.teams, lambda t: t.name)]
    found += [(("teams", i, "namespace"), "a second team in this namespace; allowed: one team per namespace")
              for i in _duplicates(training.teams, lambda t: t.namespace)]
    found += [(("teams", i, "namespace"), f"namespace {t.namespace!r} is a service's (mesh-injected); give the team its own")
              for i, t in enumerate(training.teams) if t.namespace in serving_namespaces]
    found += [(("runtimes", i, "kind"), "a second runtime of this kind") for i in _duplicates(training.runtimes, lambda r: r.kind)]
    groups = {g.name: g for g in node_groups}
    found += topology_problems(training, node_groups)
    found += [(("networks", name), f"no GPU node group {name!r}")
              for name in training.networks if groups.get(name) is None or groups[name].gpu is None]
    kinds = ", ".join(r.kind for r in training.runtimes) or "none"
    teams = ", ".join(t.name for t in training.teams) or "none"
    for i in _duplicates(training.jobs, lambda j: (j.team, j.name)):
        found.append((("jobs", i, "name"), "a second job of this name in its team"))
    for i, job in enumerate(training.jobs):
        at: KeyPath = ("jobs", i)
        if training.team(job.team) is None:
            found.append((at + ("team",), f"no team {job.team!r}; teams: {teams}"))
        runtime = training.runtime(job.runtime)
        if runtime is None:
            found.append((at + ("runtime",), f"no runtime of kind {job.runtime!r}; runtimes: {kinds}"))
        elif grammar.quantity(job.memory) <= grammar.quantity(runtime.shm_size):
            # The runtime's /dev/shm is a memory-backed emptyDir, counted against the pod's memory limit.
            found.append((at + ("memory",), f"{job.memory} is no more than the {runtime.shm_size} /dev/shm of runtime "
                                            f"{job.runtime} (training.runtimes[].shmSize), which the pod's memory limit "
                                            f"counts, so nothing is left for the processes; allowed: more than {runtime.shm_size}"))
        if runtime is not None:
            found += [(at + path, why) for path, why in undeclared_podset_problems(job, runtime, bool(training.topology_levels))]
        if job.suspend:
            found.append((at + ("suspend",), SUSPEND_REFUSED))
        found += [(at + path, why) for path, why in job_placement_problems(job, groups)]
        found += [(at + path, why) for path, why in mesh_problems(job)]
        found += [(at + path, why) for path, why in command_problems(job)]
        for what in WORKSPACE_KEYS:
            place = getattr(job, what)
            if place is not None and caches is not None and place.cache not in caches:
                found.append((at + (what, "cache"), f"the stack has no weight cache {place.cache!r} (weightCaches.{place.cache})"))
        if job.checkpoint is not None and job.checkpoint.cache != "fileShare":
            found.append((at + ("checkpoint", "cache"), "checkpoints go to the file share (the node pods mount its claim); allowed: fileShare"))
        if job.code is not None and job.code.cache != "fileShare":
            found.append((at + ("code", "cache"), "the node pods mount their code from the file share's claim (Trainer has no "
                                                  "initializer for code); allowed: fileShare"))
        found += [(at + ("secretEnv", name), "also set in env; allowed: one of env and secretEnv")
                  for name in sorted(set(job.secret_env) & set(job.env))]
        clash = sorted(set(job.env) & set(training.networks.get(job.gpu.group, GroupNetwork()).env()))
        if clash:
            found.append((at + ("env",), f"{', '.join(clash)} set by training.networks.{job.gpu.group}; set it there or here, not both"))
        found += [(at + ("env", name), why) for name, why in nccl_env_problems(job.env)]
    return found


def training_section_problems(settings) -> list[tuple[KeyPath, str]]:
    """The stack's `training` section (absent: nothing to check), paths from the stack's root."""
    training = settings.training
    if training is None:
        return secret_env_problems(TrainingSettings(), settings.training_secrets)
    caches = frozenset(k for k, v in (("fileShare", settings.weight_caches.file_share), ("s3", settings.weight_caches.s3))
                       if v is not None)
    serving = frozenset(w.k8s_namespace for w in settings.workloads)
    return [(("training", *path), why)
            for path, why in training_problems(training, settings.cluster.node_groups, serving, caches)
            ] + publish_section_problems(settings) + secret_env_problems(training, settings.training_secrets) + (
                checkpoint_path_problems(settings))


def secret_env_problems(training: TrainingSettings, secrets) -> list[tuple[KeyPath, str]]:
    """Each job's secretEnv names a secret of trainingSecrets; each of those is used."""
    known = ", ".join(sorted(secrets)) or "none"
    found: list[tuple[KeyPath, str]] = [
        (("training", "jobs", i, "secretEnv", env), f"no secret {name!r} in trainingSecrets (secrets: {known}); "
         f"allowed: a name of trainingSecrets, set with pulumi config set --secret --path 'trainingSecrets.{name}' ...")
        for i, job in enumerate(training.jobs) for env, name in job.secret_env.items() if name not in secrets]
    used = {name for job in training.jobs for name in job.secret_env.values()}
    found += [(("trainingSecrets", name), "no job's secretEnv names it; allowed: a secret some training.jobs[].secretEnv names")
              for name in sorted(set(secrets) - used)]
    return found

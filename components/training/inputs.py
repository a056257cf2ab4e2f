"""What Training takes: the `training` settings, the GPU groups it places jobs on, and per team
namespace the weight caches its jobs read and write."""

from __future__ import annotations

from typing import Optional

from pydantic import SecretStr

from inference_platform.settings.base import DnsLabel, Labels, Model, ShortName
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.training import WORKSPACE_KEYS, TrainingSettings, checkpoint_claim, training_problems
from inference_platform.settings.training_publish import PipelineRef, publish_problems
from inference_platform.weights.inputs import WeightsRef


def cache_namespaces(training: TrainingSettings, cache: str) -> list[str]:
    """Team namespaces whose jobs read or write the weight cache `cache` ("fileShare" or "s3"), sorted."""
    teams = {t.name: t.namespace for t in training.teams}
    return sorted({teams[j.team] for j in training.jobs if j.team in teams
                   for place in (getattr(j, k) for k in WORKSPACE_KEYS) if place is not None and place.cache == cache})


def checkpoint_directories(training: TrainingSettings) -> dict[str, dict[str, str]]:
    """Per team namespace, its jobs' checkpoint claims and directories in the file share."""
    teams = {t.name: t.namespace for t in training.teams}
    out: dict[str, dict[str, str]] = {}
    for job in training.jobs:
        if job.team in teams and job.checkpoint is not None and job.checkpoint.cache == "fileShare":
            out.setdefault(teams[job.team], {})[checkpoint_claim(job)] = job.checkpoint.path.strip("/")
    return out


class TrainingInputs(Model):
    """Kubeflow Trainer (with JobSet) from its pinned chart, the platform's ClusterTrainingRuntimes, and the teams' TrainJobs on the GPU groups."""

    training: TrainingSettings = TrainingSettings()
    """Teams, runtimes, jobs and the GPU groups' NCCL networks (the stack file's `training`)."""
    gpu_groups: list[NodeGroup] = []
    """The GPU node groups the jobs run on: their node contract (selector, taints) and GPU shares."""
    weights: dict[DnsLabel, WeightsRef] = {}
    """Per team namespace whose jobs read or write a weight cache, that namespace's caches (the file share's claim, the S3 Secret)."""
    create_namespaces: bool = True
    """Create each team's namespace (Pod Security `restricted`). The platform creates them itself, before the weight caches' claims in them, and passes false."""
    install_trainer: bool = True
    """Install Kubeflow Trainer (with JobSet) from its pinned chart. The platform installs it itself, before Kueue (whose TrainJob integration needs Trainer's CRDs when it starts), and passes false."""
    priority_class: Optional[str] = None
    """PriorityClass of the jobs' GPU pods (the platform's `gpu-training`: below serving, which preempts them; they preempt nothing); none: the default priority, level with serving."""
    system_node_selector: Labels = {}
    """Node labels Trainer's and JobSet's controllers and the runtimes' data loaders and publish steps select (the system group). Empty: any node that admits them."""
    secrets: dict[str, SecretStr] = {}
    """Secret. The values the jobs' `secretEnv` names (the stack's `trainingSecrets`), by name."""
    production: bool = False
    """A production stack: its TrainJobs say that `platformctl diff` refuses an edit that would kill them while they run, unless the job's `restartOnEdit` accepts it."""
    pipelines: dict[ShortName, PipelineRef] = {}
    """Per service a job publishes to (`publishTo.service`), its model pipeline: namespace, WorkflowTemplate and the weight cache it reads the ONNX file from."""

    def problems(self) -> list[tuple[KeyPath, str]]:
        """The `training` checks against the given groups, each publishing job's pipeline in
        `pipelines`, and every cache a job uses named in `weights`."""
        found = [(("training", *path), why) for path, why in training_problems(self.training, self.gpu_groups)]
        found += [(("training", *path), why) for path, why in publish_problems(self.training, self.pipelines)]
        for i, job in enumerate(self.training.jobs):
            found += [(("training", "jobs", i, "secretEnv", env), f"no secret {name!r} in secrets")
                      for env, name in job.secret_env.items() if name not in self.secrets]
            team = self.training.team(job.team)
            if team is None:
                continue
            ref = self.weights.get(team.namespace, WeightsRef())
            for what in WORKSPACE_KEYS:
                place = getattr(job, what)
                if place is None:
                    continue
                needed = ("s3_secret_name", "s3_endpoint", "s3_bucket") if what in job.s3_initializers else ("claim_name",)
                missing = [k for k in needed if getattr(ref, k) is None]
                if missing:
                    found.append((("training", "jobs", i, what, "cache"),
                                  f"cache {place.cache!r} needs weights[{team.namespace!r}].{', '.join(missing)}"))
        used = {name for job in self.training.jobs for name in job.secret_env.values()}
        found += [(("secrets", name), "no job's secretEnv names it; allowed: a secret some training.jobs[].secretEnv names")
                  for name in sorted(set(self.secrets) - used)]
        return found

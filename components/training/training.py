"""Training: Kubeflow Trainer from its pinned chart, the platform's ClusterTrainingRuntimes and
the teams' TrainJobs on the GPU groups (docs/training.md)."""

from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.args import TrainingArgs
from inference_platform.core.common import COMPONENT_KEY, init_component, namespace, resource_opts, standard_labels
from inference_platform.settings.component_args import validated
from inference_platform.settings.training import TrainingSettings, TrainingTeam, TrainJobSettings
from inference_platform.training.gpu_quota import QUOTA_NAME, gpu_quota_spec
from inference_platform.training.inputs import TrainingInputs
from inference_platform.training.install import install_trainer
from inference_platform.training.jobs import (
    API_VERSION,
    IMMUTABLE_PATHS,
    runtime_of,
    secret_env_name,
    trainjob_annotations,
    trainjob_labels,
    trainjob_spec,
)
from inference_platform.training.publish import publish_job, publish_resources
from inference_platform.training.runtimes import COMPONENT, runtime_spec, variant_name
from inference_platform.weights.inputs import WeightsRef


def team_namespace(logical_name: str, team: TrainingTeam, opts: pulumi.ResourceOptions) -> k8s.core.v1.Namespace:
    """A team's namespace: Pod Security `restricted`, outside the mesh (a sidecar never exits, so a
    training pod's Job would never complete)."""
    return namespace(logical_name, team.namespace, opts, app=team.name, pod_security="restricted",
                     labels={COMPONENT_KEY: COMPONENT})


def runtime_variants(training: TrainingSettings) -> list[tuple[str, tuple[str, ...], bool]]:
    """(kind, initializers, publish) of every runtime: each kind alone, and each set of S3
    initializers and publish step its jobs use."""
    variants = [(r.kind, (), False) for r in training.runtimes]
    for job in training.jobs:
        key = (job.runtime, tuple(sorted(job.s3_initializers)), job.publish_to is not None)
        if (key[1] or key[2]) and key not in variants:
            variants.append(key)
    return variants


def secret_env(logical_name: str, job: TrainJobSettings, team: TrainingTeam, a: TrainingInputs,
               opts: pulumi.ResourceOptions) -> k8s.core.v1.Secret:
    """The Secret a job's secretEnv reads from: one key per variable, each value a Pulumi secret."""
    return k8s.core.v1.Secret(
        logical_name, metadata={"name": secret_env_name(job), "namespace": team.namespace,
                                "labels": standard_labels(job.name, **{COMPONENT_KEY: COMPONENT})},
        type="Opaque", string_data={k: pulumi.Output.secret(a.secrets[v].get_secret_value()) for k, v in job.secret_env.items()},
        opts=opts)


class Training(pulumi.ComponentResource):
    """Kubeflow Trainer and JobSet, ClusterTrainingRuntimes per strategy, and the teams' TrainJobs."""

    runtimes: pulumi.Output[list[str]]
    """Names of the ClusterTrainingRuntimes."""
    jobs: pulumi.Output[dict[str, str]]
    """Per job (`<team>/<job>`), `<namespace>/<name>` of its TrainJob."""

    def __init__(self, name: str, args: TrainingArgs, opts: Optional[pulumi.ResourceOptions] = None):
        a = validated(TrainingInputs, args, "Training")
        init_component(self, "Training", name, opts)
        # Trainer's chart installs the CRDs and the webhooks that admit these objects; the platform
        # installs it before this component (and before Kueue).
        self.release = install_trainer(self, name, a.system_node_selector) if a.install_trainer else None
        after_release = resource_opts(self, depends_on=[self.release] if self.release else ())
        runtimes: dict[str, pulumi.Resource] = {}
        for kind, initializers, publish in runtime_variants(a.training):
            runtime = a.training.runtime(kind)
            rt_name = variant_name(kind, initializers, publish)
            runtimes[rt_name] = k8s.apiextensions.CustomResource(
                f"{name}-runtime-{rt_name}", api_version=API_VERSION, kind="ClusterTrainingRuntime",
                metadata={"name": rt_name, "labels": standard_labels(rt_name, **{COMPONENT_KEY: COMPONENT})},
                spec=runtime_spec(runtime, initializers, a.system_node_selector, runtime.initializer_volume,
                                  a.priority_class, publish_job(kind, a.system_node_selector) if publish else None),
                opts=after_release)
        teams = {t.name: t for t in a.training.teams}
        namespaces = ({t.name: team_namespace(f"{name}-team-{t.name}", t, resource_opts(self)) for t in a.training.teams}
                      if a.create_namespaces else {})
        groups = {g.name: g for g in a.gpu_groups}
        if a.priority_class is not None:
            for t in a.training.teams:
                # A GPU pod of another class would run unqueued, level with serving (training/gpu_quota.py).
                k8s.core.v1.ResourceQuota(
                    f"{name}-gpu-quota-{t.name}", metadata={"name": QUOTA_NAME, "namespace": t.namespace,
                                                          "labels": standard_labels(QUOTA_NAME, **{COMPONENT_KEY: COMPONENT})},
                    spec=gpu_quota_spec(a.gpu_groups, a.priority_class),
                    opts=resource_opts(self, depends_on=[namespaces[t.name]] if t.name in namespaces else []))
        publishing = publish_resources(name, a, teams, namespaces, resource_opts(self))
        refs: dict[str, pulumi.Input[str]] = {}
        for job in a.training.jobs:
            team = teams[job.team]
            # After the runtime it names: Trainer's and Kueue's webhooks refuse a job whose runtime is missing.
            in_namespace = [namespaces[team.name]] if team.name in namespaces else []
            deps = [runtimes[runtime_of(job)], *in_namespace, *publishing.get((team.name, job.name), [])]
            if job.secret_env:
                deps.append(secret_env(f"{name}-job-{team.name}-{job.name}-env", job, team, a,
                                       resource_opts(self, depends_on=in_namespace)))
            trainjob = k8s.apiextensions.CustomResource(
                f"{name}-job-{team.name}-{job.name}", api_version=API_VERSION, kind="TrainJob",
                metadata={"name": job.name, "namespace": team.namespace, "labels": trainjob_labels(job, team),
                          "annotations": trainjob_annotations(job, a.production)},
                spec=trainjob_spec(job, groups[job.gpu.group], a.training.networks.get(job.gpu.group),
                                   a.weights.get(team.namespace, WeightsRef())),
                # pulumi-kubernetes applies a custom resource without waiting on it (platformctl/awaits.py):
                # a job waiting for Kueue's admission or for GPU nodes holds up nothing.
                opts=pulumi.ResourceOptions.merge(resource_opts(self, depends_on=deps), pulumi.ResourceOptions(
                    replace_on_changes=IMMUTABLE_PATHS, delete_before_replace=True)))
            refs[f"{team.name}/{job.name}"] = pulumi.Output.concat(team.namespace, "/", trainjob.metadata["name"])
        self.runtimes = pulumi.Output.from_input(list(runtimes))
        self.jobs = pulumi.Output.all(**refs) if refs else pulumi.Output.from_input({})
        self.register_outputs({"runtimes": self.runtimes, "jobs": self.jobs})

"""`training.jobs[].publishTo`: a TrainJob that hands its trained model to a service's model pipeline.

The job writes an ONNX file into its checkpoint directory on the file share; when its `node` job
completes, a `publish` step creates an Argo Workflow from the service's pipeline WorkflowTemplate
with that file as the `onnx` argument (training/publish.py). The pipeline reads `onnx` from the
base version's weight cache (tuning/pipeline.py, export step), and every namespace's claim of the
file share sees the same files (weights/caches.py), so the file must be on the file share and the
base version must read its repository from it.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Optional

from pydantic import AfterValidator

from inference_platform.core import grammar
from inference_platform.settings.base import DnsLabel, Model, ShortName
from inference_platform.settings.errors import KeyPath

# A version name (settings/serving.py Version.name: a DNS label of at most 20 characters).
VersionName = Annotated[str, AfterValidator(lambda v: grammar.dns_label(v, 20))]
# What the pipeline's export step accepts as `onnx` (tuning/pipeline.py CHECK_ARGUMENTS): plain
# names of A-Z, a-z, 0-9, '.', '_', '-' joined by '/', no '.' or '..' part, ending in .onnx.
_ONNX_PART = re.compile(r"[A-Za-z0-9._-]+")
MAX_ONNX = 255


def _onnx_file(value: str) -> str:
    parts = value.split("/")
    if (len(value) > MAX_ONNX or not value.endswith(".onnx") or any(p in ("", ".", "..") for p in parts)
            or not all(_ONNX_PART.fullmatch(p) for p in parts)):
        raise ValueError(f"{value[:40]!r} is not an ONNX file path: a relative path of A-Z, a-z, 0-9, '.', '_', '-' "
                         f"and '/', no '.' or '..' part, ending in .onnx, at most {MAX_ONNX} characters")
    return value


OnnxFile = Annotated[str, AfterValidator(_onnx_file)]


class PublishTo(Model):
    service: ShortName
    """The service (`services[].name`, with a `pipeline`) whose model pipeline builds, tunes and publishes the trained model as a new canary version."""
    version: Optional[VersionName] = None
    """Name of the new version (a DNS label of at most 20 characters the service does not use); default: the job's name."""
    onnx: OnnxFile = "model.onnx"
    """The ONNX file the job exports, relative to its checkpoint directory (`$PLATFORM_CHECKPOINT_DIR/<onnx>`): the pipeline's `onnx` argument is `<checkpoint.path>/<onnx>` on the file share."""


class PipelineRef(Model):
    """Where a service's model pipeline is: what a publishing job's Workflow names."""

    namespace: DnsLabel
    """The service's namespace, where its WorkflowTemplate is."""
    template: DnsLabel
    """The WorkflowTemplate (`<service>-pipeline`)."""
    cache: Literal["fileShare", "s3"]
    """The weight cache the pipeline reads `onnx` from: its base version's."""


def publish_version(job) -> str:
    """The version a publishing job's pipeline run makes."""
    return job.publish_to.version or job.name


def workflow_name(job) -> str:
    """The Workflow a publishing job creates: one per job and version (at most 40 + 1 + 20 characters).
    The pipeline records it as the new version's provenance.workflow."""
    return f"{job.name}-{publish_version(job)}"


def made_by(job, version) -> bool:
    """Whether `version` is the one the job's own pipeline run proposed: the pipeline's patch records
    the Workflow (the job's) and the ONNX file (the job's) in its provenance. A job without a
    checkpoint writes no ONNX file, so no version is its (publish_problems names the missing key)."""
    p = version.provenance
    return (p is not None and job.checkpoint is not None and p.workflow == workflow_name(job)
            and p.onnx == onnx_path(job))


def onnx_path(job) -> str:
    """The pipeline's `onnx` argument: the job's ONNX file on the file share."""
    return f"{job.checkpoint.path.strip('/')}/{job.publish_to.onnx}"


def publish_problems(training, pipelines: dict[str, PipelineRef],
                     report_unknown: bool = True) -> list[tuple[KeyPath, str]]:
    """Each publishing job names a pipeline it can reach: the service's pipeline exists
    (`pipelines`; `report_unknown` false: the caller reported it), reads the file share, the job
    writes its checkpoint there, its version is a version name and no other job publishes that
    version to the service (paths below `training`)."""
    found: list[tuple[KeyPath, str]] = []
    taken: dict[tuple[str, str], int] = {}
    known = ", ".join(sorted(pipelines)) or "none"
    for i, job in enumerate(training.jobs):
        if job.publish_to is None:
            continue
        at: KeyPath = ("jobs", i, "publishTo")
        ref = pipelines.get(job.publish_to.service)
        if ref is None:
            if report_unknown:
                found.append((at + ("service",), f"no model pipeline for service {job.publish_to.service!r}; "
                                                  f"services with a pipeline: {known}"))
            continue
        if ref.cache != "fileShare":
            found.append((at + ("service",), f"the pipeline of {job.publish_to.service!r} reads its ONNX from cache "
                                              f"{ref.cache!r}, the job writes the file share; allowed: a service whose "
                                              "pipeline's base version reads the fileShare cache"))
        if job.checkpoint is None:
            found.append((at, "needs checkpoint (cache fileShare): the ONNX file is read from the checkpoint directory"))
        if job.publish_to.version is None and len(job.name) > 20:
            found.append((at + ("version",), f"required: the job's name {job.name!r} is longer than a version name "
                                              "(a DNS label of at most 20 characters)"))
        key = (job.publish_to.service, publish_version(job))
        if key in taken:
            first = training.jobs[taken[key]]
            found.append((at + ("version",), f"version {key[1]!r} of {key[0]!r} is published by job {first.name!r} of team "
                                              f"{first.team!r} too; allowed: one job per version"))
        taken.setdefault(key, i)
    return found


def pipeline_refs(settings) -> dict[str, PipelineRef]:
    """Per service with a model pipeline, where it is (the stack's services)."""
    refs = {}
    for svc in settings.services:
        if svc.pipeline is None:
            continue
        base = next((v for v in svc.versions if v.name == svc.pipeline.base_version), None)
        if base is not None:
            refs[svc.name] = PipelineRef(namespace=svc.k8s_namespace, template=f"{svc.name}-pipeline",
                                         cache=base.model_repository.cache)
    return refs


def publish_section_problems(settings) -> list[tuple[KeyPath, str]]:
    """The stack's publishing jobs: the service exists and has a pipeline, the new version is not
    one of its versions unless the job's own run made it, and `publish_problems` against its
    pipelines (paths from the root)."""
    if settings.training is None:
        return []
    services = {svc.name: svc for svc in settings.services}
    found: list[tuple[KeyPath, str]] = []
    for i, job in enumerate(settings.training.jobs):
        if job.publish_to is None:
            continue
        at: KeyPath = ("training", "jobs", i, "publishTo")
        svc = services.get(job.publish_to.service)
        if svc is None:
            found.append((at + ("service",), f"no service {job.publish_to.service!r}; services: "
                                              f"{', '.join(sorted(services)) or 'none'}"))
        elif svc.pipeline is None:
            found.append((at + ("service",), f"service {svc.name!r} has no pipeline; allowed: a service with "
                                              "services[].pipeline (and modelPipeline.enabled)"))
        elif (made := next((v for v in svc.versions if v.name == publish_version(job)), None)) and not made_by(job, made):
            # The version the job's own run added (its pipeline's patch) is the flow's end, not a clash.
            found.append((at + ("version",), f"{svc.name!r} already has a version {publish_version(job)!r} that this "
                                              f"job's pipeline run did not make (its provenance does not name the "
                                              f"Workflow {workflow_name(job)!r} and the job's ONNX file); allowed: "
                                              "a new version name, or the version this job's run added"))
    return found + [(("training", *path), why)
                    for path, why in publish_problems(settings.training, pipeline_refs(settings), report_unknown=False)]

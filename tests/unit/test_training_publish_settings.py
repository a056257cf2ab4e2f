"""`training.jobs[].publishTo` refuses, each with one line naming its key path, a job whose trained
model could not reach the service's pipeline: no such service or pipeline, a pipeline reading
another cache than the file share the job writes, no checkpoint, a version the service has or
another job publishes."""

from __future__ import annotations

import copy

import pytest

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from inference_platform.settings.training_publish import PipelineRef, onnx_path, publish_problems
from inference_platform.training.inputs import TrainingInputs
from tests.support.training_stacks import training_config

PIPELINE = {"baseVersion": "v1", "model": "embed", "inputs": {"input_ids": [128]}, "repositoryPrefix": "svc"}
AT = "inference-platform:training.jobs[ddp].publishTo"


def publishing(**publish_to) -> dict:
    """The training test stack whose service `svc` has a pipeline and whose DDP job publishes to it."""
    raw = training_config()
    raw["services"][0]["pipeline"] = copy.deepcopy(PIPELINE)
    raw["modelPipeline"] = {"enabled": True}
    raw["training"]["jobs"][0]["publishTo"] = {"service": "svc", **publish_to}
    return raw


def problems(raw) -> dict[str, str]:
    with pytest.raises(ConfigError) as err:
        parse_settings(raw, "Pulumi.test-dev.yaml")
    return dict(zip(err.value.paths, (msg for _, msg in err.value.problems), strict=True))


def test_a_job_publishing_to_a_service_with_a_pipeline_is_valid_and_its_onnx_is_in_its_checkpoint_directory():
    settings = parse_settings(publishing(version="v2"), "Pulumi.test-dev.yaml")
    job = settings.training.jobs[0]
    assert (job.publish_to.service, job.publish_to.version, job.publish_to.onnx) == ("svc", "v2", "model.onnx")
    assert onnx_path(job) == "ckpt/ddp/model.onnx"


def test_a_job_may_not_publish_to_a_service_that_does_not_exist():
    raw = publishing()
    raw["training"]["jobs"][0]["publishTo"]["service"] = "ghost"
    assert problems(raw) == {f"{AT}.service": "no service 'ghost'; services: svc"}


def test_a_job_may_not_publish_to_a_service_without_a_pipeline():
    raw = publishing()
    del raw["services"][0]["pipeline"]
    assert problems(raw) == {f"{AT}.service": "service 'svc' has no pipeline; allowed: a service with "
                                              "services[].pipeline (and modelPipeline.enabled)"}


def test_a_job_may_not_publish_to_a_pipeline_that_reads_the_onnx_from_the_s3_cache():
    raw = publishing()
    raw["weightCaches"]["s3"] = {"endpoint": "https://s3.example.com", "bucket": "weights", "region": "eu-1"}
    raw["s3AccessKeyId"], raw["s3SecretAccessKey"] = "AKIA", "secret"
    raw["services"][0]["versions"][0]["modelRepository"] = {"cache": "s3", "path": "svc/v1"}
    with pytest.raises(ConfigError) as err:
        parse_settings(raw, "Pulumi.test-dev.yaml", secret_keys=frozenset({"s3AccessKeyId", "s3SecretAccessKey"}))
    found = dict(zip(err.value.paths, (msg for _, msg in err.value.problems), strict=True))
    assert found == {f"{AT}.service": "the pipeline of 'svc' reads its ONNX from cache 's3', the job writes the file "
                                      "share; allowed: a service whose pipeline's base version reads the fileShare cache"}


def test_a_job_without_a_checkpoint_has_no_onnx_to_publish():
    raw = publishing()
    del raw["training"]["jobs"][0]["checkpoint"]
    assert problems(raw) == {AT: "needs checkpoint (cache fileShare): the ONNX file is read from the checkpoint directory"}


def test_the_new_version_may_not_be_one_the_service_has_unless_the_jobs_own_run_made_it():
    found = problems(publishing(version="v1"))
    assert list(found) == [f"{AT}.version"]
    assert found[f"{AT}.version"].startswith("'svc' already has a version 'v1' that this job's pipeline run did not make")
    # v1 as the job's pipeline patch writes it: the job's Workflow and ONNX file in its provenance.
    raw = publishing(version="v1")
    raw["services"][0]["versions"][0]["provenance"] = {"workflow": "ddp-v1", "onnx": "ckpt/ddp/model.onnx",
                                                       "onnxSha256": "0" * 64}
    assert parse_settings(raw, "Pulumi.test-dev.yaml")


def test_two_jobs_may_not_publish_the_same_version_of_a_service():
    raw = publishing(version="v2")
    second = copy.deepcopy(raw["training"]["jobs"][0])
    raw["training"]["jobs"].append(dict(second, name="ddp-again", checkpoint={"cache": "fileShare", "path": "ckpt/ddp-again"}))
    assert problems(raw) == {"inference-platform:training.jobs[ddp-again].publishTo.version":
                             "version 'v2' of 'svc' is published by job 'ddp' of team 'vision' too; allowed: one job per version"}


def test_without_a_version_the_jobs_name_must_fit_a_version_name():
    raw = publishing()
    raw["training"]["jobs"][0]["name"] = "a-rather-long-job-name"
    at = "inference-platform:training.jobs[a-rather-long-job-name].publishTo"
    assert problems(raw) == {f"{at}.version": "required: the job's name 'a-rather-long-job-name' is longer than a "
                                              "version name (a DNS label of at most 20 characters)"}


@pytest.mark.parametrize("onnx", ["../svc/v1/model.onnx", "/abs/model.onnx", "model.pt", "a//model.onnx",
                                  "./model.onnx", "mo del.onnx", "$(x).onnx", "a/" * 130 + "m.onnx"])
def test_the_onnx_file_is_a_plain_relative_onnx_path_the_pipelines_export_step_accepts(onnx):
    found = problems(publishing(onnx=onnx))
    assert list(found) == [f"{AT}.onnx"] and "is not an ONNX file path" in found[f"{AT}.onnx"]


def test_training_alone_refuses_a_job_whose_service_has_no_pipeline_among_its_inputs():
    raw = publishing()
    settings = parse_settings(raw, "Pulumi.test-dev.yaml")
    inputs = TrainingInputs(training=settings.training, gpu_groups=settings.gpu_groups)
    assert ((("training", "jobs", 0, "publishTo", "service"), "no model pipeline for service 'svc'; services with a "
             "pipeline: none")) in inputs.problems()
    ref = PipelineRef(namespace="svc", template="svc-pipeline", cache="fileShare")
    assert publish_problems(settings.training, {"svc": ref}) == []


def _with_data_loader(raw: dict) -> dict:
    """`raw` with a data loader on the DDP job's runtime (the other runtimes as they are by default)."""
    raw["training"]["runtimes"] = [{"kind": "torch-ddp", "dataLoader": {"image": "example.com/loader:1.0", "command": ["python", "load.py"]}},
                                   {"kind": "torch-fsdp-tp"}]
    return raw


def _with_topology(raw: dict) -> dict:
    raw["training"]["topologyLevels"] = ["kubernetes.io/hostname"]
    raw["cluster"]["nodeGroups"][1]["minNodes"] = raw["cluster"]["nodeGroups"][1]["maxNodes"]  # TAS needs a fixed GPU group
    return raw


def test_a_publishing_job_whose_runtime_has_data_loaders_is_refused_as_kueue_would_never_admit_it():
    # Two pod sets of CPU and memory only: Kueue stops at the first, the publish step gets no assignment.
    found = problems(_with_data_loader(publishing()))
    assert list(found) == [AT] and "never admitted" in found[AT] and "allowed: publishTo on a job whose runtime has no dataLoader" in found[AT]


@pytest.mark.parametrize("raw, at", [
    (lambda: _with_topology(publishing()), AT),
    (lambda: _with_topology(_with_data_loader(training_config())), "inference-platform:training.jobs[ddp].runtime"),
])
def test_a_cpu_only_pod_set_under_topology_levels_is_refused_as_kueue_would_skip_the_topology_step(raw, at):
    found = problems(raw())
    assert list(found) == [at] and "no topology placement" in found[at] and "allowed: no topologyLevels" in found[at]


def test_one_cpu_only_pod_set_without_topology_levels_is_accepted():
    # The nodes' pod set comes first and gets its GPU flavor; the publish step or the loaders after it no flavor, no harm.
    assert parse_settings(publishing(), "Pulumi.test-dev.yaml").training.jobs[0].publish_to.service == "svc"
    assert parse_settings(_with_data_loader(training_config()), "Pulumi.test-dev.yaml").training.runtime("torch-ddp").data_loader
    assert parse_settings(_with_topology(training_config()), "Pulumi.test-dev.yaml").training.topology_levels

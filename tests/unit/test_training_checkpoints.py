"""Checkpoint directories are the only place a team writes the file share: each is apart from the
other jobs' and from every model repository serving reads or a pipeline publishes into."""

from __future__ import annotations

import pytest

from inference_platform.settings.loader import parse_settings
from tests.unit.test_training_placements import refused, train_dev

AT = "inference-platform:training.jobs[{}].checkpoint.path"


@pytest.mark.parametrize("job,path,clash", [
    (0, "chat/v1", "services[chat].versions[v1].modelRepository.path 'chat/v1'"),
    (0, "embed", "services[embed].versions[v1].modelRepository.path 'embed/v1'"),
    (0, "embed/v2/ckpt", "services[embed].pipeline.repositoryPrefix 'embed'"),
    (1, "checkpoints/resnet-ddp/llm", "job 'resnet-ddp''s checkpoint directory 'checkpoints/resnet-ddp'"),
    (1, "checkpoints/resnet-ddp", "job 'resnet-ddp''s checkpoint directory 'checkpoints/resnet-ddp'"),
], ids=["a-serving-repository", "above-a-repository", "inside-a-pipelines-prefix", "inside-another-job", "another-jobs"])
def test_a_checkpoint_directory_overlapping_a_repository_or_another_jobs_is_refused(job, path, clash):
    raw = train_dev()
    raw["training"]["jobs"][job]["checkpoint"]["path"] = path
    name = raw["training"]["jobs"][job]["name"]
    found = refused(raw)
    assert list(found) == [AT.format(name)]
    assert found[AT.format(name)].startswith(f"{path!r} overlaps {clash}")


def test_apart_directories_with_a_shared_prefix_of_letters_are_accepted():
    raw = train_dev()
    raw["training"]["jobs"][1]["checkpoint"]["path"] = "checkpoints/resnet-ddp-llm"
    assert parse_settings(raw, "stacks/Pulumi.train-dev.yaml", stack="train-dev")

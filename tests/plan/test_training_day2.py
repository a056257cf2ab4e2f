"""Edits that kill a running TrainJob are named by `platformctl diff`, job by job, with where it
starts again: a replacement (the job's own keys, or its GPU group's networks, selector and taints)
and a runtime edit Kueue evicts it for (kueue v0.19.2 compares the live runtime's containers with
the running Workload's). A production stack refuses them unless the job's restartOnEdit accepts it;
a runtime edit Kueue does not compare (volumes, failure policy) kills nothing."""

from __future__ import annotations

import copy

import pytest

from platformctl.__main__ import main
from platformctl.plan import write_plan
from tests.conftest import render_raw
from tests.support.training_stacks import training_config


def production() -> dict:
    raw = training_config()
    raw["environment"], raw["production"] = "prod", True
    # Production refuses Basic credentials over plain HTTP.
    raw["mesh"] = {"tls": {"enabled": True, "secretName": "test-tls"}}
    return raw


def diff(tmp_path, capsys, before: dict, edit) -> tuple[int, list[str]]:
    """`platformctl diff` of `before` against `before` edited: its exit code and the lines about TrainJobs."""
    after = copy.deepcopy(before)
    edit(after)
    write_plan(render_raw(before), tmp_path / "a")
    write_plan(render_raw(after), tmp_path / "b")
    code = main(["diff", str(tmp_path / "a"), str(tmp_path / "b")])
    lines = capsys.readouterr().out.splitlines()
    return code, [line for line in lines if line.startswith(("error:", "note:")) and "TrainJob vision-train/" in line]


def levels(lines: list[str]) -> dict[str, str]:
    """Per job named, whether the diff refuses (error) or notes the edit."""
    return {line.split("TrainJob vision-train/", 1)[1].split(":", 1)[0]: line.split(":", 1)[0] for line in lines}


def networks(raw):
    raw["training"]["networks"]["gpu"]["socketIfname"] = "=eth0"


def taint(raw):
    raw["cluster"]["nodeGroups"][1]["taints"] = [{"key": "example.com/dedicated", "value": "ml"}]


def selector(raw):
    raw["cluster"]["nodeGroups"][1]["selector"] = {"pool": "gpu-h100"}


@pytest.mark.parametrize("edit", [networks, taint, selector])
def test_a_group_level_edit_of_a_production_stack_is_refused_for_each_job_it_kills(tmp_path, capsys, edit):
    code, lines = diff(tmp_path, capsys, production(), edit)
    assert code == 1
    assert levels(lines) == {"ddp": "error", "llm": "error"}
    ddp, llm = sorted(lines)
    assert "replaced" in ddp and "killed" in ddp
    # Where each starts again: the DDP job from its checkpoint directory, the other one from zero.
    assert "from its last checkpoint in ckpt/ddp" in ddp and "from zero (it has no checkpoint)" in llm
    assert "training.jobs[ddp].restartOnEdit: true" in ddp


def test_a_job_that_accepts_restarts_gets_a_note_and_the_others_still_refuse(tmp_path, capsys):
    raw = production()
    raw["training"]["jobs"][0]["restartOnEdit"] = True
    code, lines = diff(tmp_path, capsys, raw, networks)
    assert code == 1 and levels(lines) == {"ddp": "note", "llm": "error"}
    raw["training"]["jobs"][1]["restartOnEdit"] = True
    code, lines = diff(tmp_path, capsys, raw, networks)
    assert code == 0 and levels(lines) == {"ddp": "note", "llm": "note"}


def test_a_stack_that_is_not_production_notes_each_job_an_edit_kills(tmp_path, capsys):
    code, lines = diff(tmp_path, capsys, training_config(), networks)
    assert code == 0 and len(lines) == 2 and all(line.startswith("note: ") and "killed" in line for line in lines)


def runtime(kind: str, **keys):
    def edit(raw):
        raw["training"]["runtimes"] = [{"kind": k, **(keys if k == kind else {})}
                                       for k in ("torch-ddp", "torch-fsdp", "torch-fsdp-tp", "lightning")]
    return edit


def test_a_runtime_edit_of_its_containers_is_refused_for_each_running_job_kueue_would_evict(tmp_path, capsys):
    # runAsUser is in the node container's securityContext: the pod sets Kueue compares change.
    code, lines = diff(tmp_path, capsys, production(), runtime("torch-ddp", runAsUser=2000))
    assert code == 1
    (line,) = lines
    assert line.startswith("error: TrainJob vision-train/ddp: the update of its ClusterTrainingRuntime ip-torch-ddp")
    assert "node pods" in line and "evicts" in line and "from its last checkpoint in ckpt/ddp" in line


@pytest.mark.parametrize("keys", [{"shmSize": "16Gi"}, {"maxRestarts": 5}])
def test_a_runtime_edit_kueue_does_not_compare_kills_no_job(tmp_path, capsys, keys):
    code, lines = diff(tmp_path, capsys, production(), runtime("torch-ddp", **keys))
    assert (code, lines) == (0, [])

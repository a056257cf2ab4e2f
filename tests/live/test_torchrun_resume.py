"""A node lost mid-run, and the run restarted whole as the runtimes' JobSet failurePolicy restarts
it: each torch runtime's job runs on two nodes of two processes (the hybrid-shard x tensor-parallel
job of tests/live/test_torchrun_distributed.py on two of four) with a checkpoint directory, its
node 1 dies after the second step's checkpoint (as a node the scheduler preempts), the other node
is ended with it, and every node starts again with the same command and env. The restarted run
resumes after step 2 and ends with the parameters of the one-process run that was never interrupted.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from inference_platform.settings.training import CHECKPOINT_DIR_ENV
from inference_platform.training.jobs import trainer_env
from inference_platform.training.trainer_env import node_launch, num_nodes
from tests.live.test_torchrun_distributed import (
    HYBRID_TP,
    PROGRAMS,
    RUNS,
    TOLERANCE,
    TORCH_BIN,
    _clean_env,
    largest_difference,
    report,
    reports,  # noqa: F401 (the fixture: the one-process reference run)
    wait_for_runs,
)
from tests.support.netutil import free_port
from tests.support.training import runtime_and_trainjob

pytestmark = pytest.mark.skipif(not (TORCH_BIN / "torchrun").exists(), reason="torch is not installed: run `make torch`")
KINDS = ("torch-ddp", "torch-fsdp", "torch-fsdp-tp", HYBRID_TP)
LOST_AFTER_STEP = 2
LOST_NODE = 1


def start(kind: str, workdir: Path, attempt: int) -> tuple[Path, list[subprocess.Popen]]:
    """Every node of the kind's job, its checkpoint directory on `workdir` (where the pods mount the
    job's `checkpoint`); on the first attempt node 1 exits after step 2's checkpoint."""
    out = workdir / f"{kind}-{attempt}.json"
    runtime_kind, nodes, procs_per_node, mesh = RUNS[kind]
    runtime, trainjob = runtime_and_trainjob(runtime_kind, [str(PROGRAMS / "train.py"), "--out", str(out)], nodes=nodes,
                                             procs_per_node=procs_per_node, mesh=mesh)
    port = free_port()
    nodes = []
    for rank in range(num_nodes(runtime, trainjob)):
        launch = node_launch(runtime, trainjob, rank)
        env = {**_clean_env(), **launch.env, "PET_MASTER_ADDR": "127.0.0.1", "PET_MASTER_PORT": str(port),
               CHECKPOINT_DIR_ENV: str(workdir / kind)}
        if attempt == 0 and rank == LOST_NODE:
            env["TRAIN_EXIT_AFTER_STEP"] = str(LOST_AFTER_STEP)
        with open(workdir / f"{kind}-{attempt}-node{rank}.log", "w") as log:
            nodes.append(subprocess.Popen(launch.argv, env=env, cwd=workdir, stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True))
    return out, nodes


@pytest.fixture(scope="module")
def resumed(tmp_path_factory) -> dict[str, tuple[dict[str, str], dict]]:
    """Per kind: why the first attempt ended, and the restarted attempt's report."""
    workdir = tmp_path_factory.mktemp("resume")
    first = {kind: start(kind, workdir, 0) for kind in KINDS}
    ended = wait_for_runs({kind: nodes for kind, (_, nodes) in first.items()})
    second = {kind: start(kind, workdir, 1) for kind in KINDS}
    again = wait_for_runs({kind: nodes for kind, (_, nodes) in second.items()})
    return {kind: (ended.get(kind, ""), report(f"{kind}-1", out, nodes, again.get(kind))) for kind, (out, nodes) in second.items()}


def test_a_job_with_a_checkpoint_has_the_directory_the_program_reads():
    from inference_platform.settings.training import TrainJobSettings

    job = TrainJobSettings.model_validate({"name": "j", "team": "t", "runtime": "torch-ddp", "image": "x/y:1",
                                           "command": ["torchrun"], "gpu": {"group": "gpu", "count": 1},
                                           "checkpoint": {"cache": "fileShare", "path": "ckpt/j"}})
    assert {"name": CHECKPOINT_DIR_ENV, "value": "/workspace/checkpoint"} in trainer_env(job, None)


@pytest.mark.parametrize("kind", KINDS)
def test_a_run_restarted_after_a_lost_node_resumes_from_its_checkpoint_and_ends_as_an_uninterrupted_run(
        resumed, reports, kind):  # noqa: F811
    ended, result = resumed[kind]
    # Node 1's workers exit after step 2's checkpoint; whichever node's agent notices first ends the run.
    assert ended.startswith("ended when node ") and "limit" not in ended, ended
    assert "failure" not in result, result.get("failure")
    assert result["resumed_after"] == LOST_AFTER_STEP
    assert largest_difference(result["params"], reports["reference"]["params"]) < TOLERANCE

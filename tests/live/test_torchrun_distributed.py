"""A real distributed run on this machine: each training runtime's TrainJob runs as Kubeflow Trainer
would run it, on two "nodes" (two torchrun processes, node ranks 0 and 1) of two processes each, on
CPU with gloo, and must reach the parameters of a one-process run on the same data. The
hybrid-shard x tensor-parallel job runs on two nodes of four: the smallest world whose (replicate,
shard, tp) mesh has every dimension above one.

The runtime and job come from tests/support/training.py; each node's command and env from
inference_platform.training.trainer_env (Trainer v2.3.0's rules); only the master address and port
change: loopback and a free port instead of the first pod's DNS name and 29500. Torch and Lightning
live in .venv-torch (`make torch`); all runs happen once and together, in the module fixture.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inference_platform.training.trainer_env import node_launch, num_nodes
from tests.conftest import ROOT
from tests.support import conformance
from tests.support.netutil import free_port
from tests.support.training import KINDS, runtime_and_trainjob

TORCH_BIN = ROOT / ".venv-torch" / "bin"
PROGRAMS = ROOT / "examples" / "training"
TOLERANCE = 1e-5
# The device mesh each kind must build from its runtime's env on 2 x 2 processes.
MESHES = {"torch-ddp": [4], "torch-fsdp": [2, 2], "torch-fsdp-tp": [1, 2, 2]}
HYBRID_TP = "torch-fsdp-tp-hybrid"
# Each run: its runtime kind, nodes, processes per node and the job's mesh keys (None: the kind's defaults).
RUNS = {**{kind: (kind, 2, 2, None) for kind in KINDS},
        HYBRID_TP: ("torch-fsdp-tp", 2, 4, {"tensorParallelDegree": 2, "hybridShardDegree": 2})}
RUN_LIMIT_S = 240  # a bound on a hung rendezvous, not a timing assertion

pytestmark = pytest.mark.skipif(not (TORCH_BIN / "torchrun").exists(), reason="torch is not installed: run `make torch`")


def _program(kind: str) -> Path:
    return PROGRAMS / ("lightning_job.py" if kind == "lightning" else "train.py")


def _clean_env() -> dict[str, str]:
    """What every process starts from: the torch venv first on PATH, nothing of this shell's PET_* or PLATFORM_*."""
    env = {k: os.environ[k] for k in ("HOME", "LANG", "TMPDIR") if k in os.environ}
    return {**env, "PATH": f"{TORCH_BIN}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONUNBUFFERED": "1"}


def start_nodes(name: str, workdir: Path) -> tuple[Path, list[subprocess.Popen]]:
    """Launch every node of the run's TrainJob with the runtime's command; where rank 0 reports.
    Each node logs to `<name>-node<rank>.log` in the work dir."""
    kind, nodes, procs_per_node, mesh = RUNS[name]
    out = workdir / f"{name}.json"
    runtime, trainjob = runtime_and_trainjob(kind, [str(_program(kind)), "--out", str(out)], nodes=nodes,
                                             procs_per_node=procs_per_node, mesh=mesh)
    port = free_port()
    processes = []
    for rank in range(num_nodes(runtime, trainjob)):
        launch = node_launch(runtime, trainjob, rank)
        env = {**_clean_env(), **launch.env, "PET_MASTER_ADDR": "127.0.0.1", "PET_MASTER_PORT": str(port)}
        with open(workdir / f"{name}-node{rank}.log", "w") as log:
            processes.append(subprocess.Popen(launch.argv, env=env, cwd=workdir, stdout=log, stderr=subprocess.STDOUT,
                                              start_new_session=True))
    return out, processes


def end_node(process: subprocess.Popen) -> None:
    """Kill a node and its workers (each node runs in a session of its own)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def wait_for_runs(runs: dict[str, list[subprocess.Popen]]) -> dict[str, str]:
    """Wait until every process exits. When a node fails, end the other nodes of its run at once
    (torchrun's agents would wait out their 300 s exit barrier for it); at RUN_LIMIT_S, end all.
    Returns, for each run ended early, why."""
    waiting = {os.pidfd_open(p.pid): (name, rank, p) for name, processes in runs.items() for rank, p in enumerate(processes)}
    deadline = time.monotonic() + RUN_LIMIT_S
    ended: dict[str, str] = {}
    try:
        while waiting:
            ready, _, _ = select.select(list(waiting), [], [], max(0.0, deadline - time.monotonic()))
            for fd in ready or list(waiting):
                os.close(fd)
                name, rank, process = waiting.pop(fd)
                if process.poll() is None or process.returncode:
                    ended.setdefault(name, f"ended when node {rank} exited with {process.returncode}" if ready
                                     else f"ended at the {RUN_LIMIT_S} s limit")
                    for node in runs[name]:
                        end_node(node)
    finally:
        for fd in waiting:
            os.close(fd)
    return ended


def report(name: str, out: Path, processes: list[subprocess.Popen], ended: str | None) -> dict:
    """Rank 0's JSON report, or the failure with the end of each failed node's log (reported by the test of that kind)."""
    failed = [(rank, p.returncode) for rank, p in enumerate(processes) if p.returncode]
    if not failed:
        return json.loads(out.read_text())
    logs = {rank: (out.parent / f"{name}-node{rank}.log").read_text(errors="replace")[-3000:] for rank, _ in failed}
    return {"failure": f"{name}: {ended}; nodes failed (rank, exit code): {failed}; logs in {out.parent}: {logs}"}


def run_all(workdir: Path) -> dict[str, dict]:
    """Every kind's run and the one-process reference, all at once (the machine's cores stay busy
    while others import torch)."""
    workdir.mkdir()
    with open(workdir / "reference-node0.log", "w") as log:
        reference = subprocess.Popen([str(TORCH_BIN / "python"), str(PROGRAMS / "train.py"), "--out", str(workdir / "reference.json")],
                                     env=_clean_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    started = {name: start_nodes(name, workdir) for name in RUNS}
    started["reference"] = (workdir / "reference.json", [reference])
    ended = wait_for_runs({name: processes for name, (_, processes) in started.items()})
    return {name: report(name, out, processes, ended.get(name)) for name, (out, processes) in started.items()}


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, dict]:
    """The runs, once per session even where pytest-xdist spreads these tests over workers: the
    first worker runs them under a lock in the session's shared temp folder, the others read its result."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if "PYTEST_XDIST_WORKER" in os.environ else base
    with open(shared / "torchrun.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = shared / "torchrun-reports.json"
        if not done.exists():
            done.write_text(json.dumps(run_all(shared / "torchrun")))
    found = json.loads(done.read_text())
    assert "failure" not in found["reference"], found["reference"]["failure"]
    return found


def largest_difference(a: dict[str, list[float]], b: dict[str, list[float]]) -> float:
    assert sorted(a) == sorted(b) and all(len(a[k]) == len(b[k]) for k in a), "different parameter shapes"
    return max(abs(x - y) for name in a for x, y in zip(a[name], b[name], strict=True))


def _report(reports: dict, kind: str) -> dict:
    assert "failure" not in reports[kind], reports[kind].get("failure")
    return reports[kind]


@pytest.mark.parametrize("kind", KINDS)
def test_the_runtime_and_trainjob_the_run_uses_validate_against_the_trainer_crds(kind, tmp_path):
    if conformance.reference_dir() is None:
        pytest.skip("no ../shared/reference")
    for doc in runtime_and_trainjob(kind, ["train.py"]):
        conformance.validate_custom(doc)


@pytest.mark.parametrize("kind", sorted(MESHES))
def test_two_nodes_of_two_processes_reach_the_one_process_parameters(reports, kind):
    report = _report(reports, kind)
    assert (report["strategy"], report["world_size"], report["mesh"]) == (kind, 4, MESHES[kind])
    difference = largest_difference(report["params"], reports["reference"]["params"])
    assert difference <= TOLERANCE, f"{kind}: parameters differ from the one-process run by {difference:.3g}"


def test_two_nodes_of_four_processes_run_the_hybrid_shard_by_tensor_parallel_mesh_to_the_one_process_parameters(reports):
    """The job's tensorParallelDegree 2 and hybridShardDegree 2 on 8 ranks: a (replicate 2, shard 2, tp 2) mesh."""
    report = _report(reports, HYBRID_TP)
    assert (report["strategy"], report["world_size"], report["mesh"]) == ("torch-fsdp-tp", 8, [2, 2, 2])
    difference = largest_difference(report["params"], reports["reference"]["params"])
    assert difference <= TOLERANCE, f"{HYBRID_TP}: parameters differ from the one-process run by {difference:.3g}"


def test_a_shifted_reference_fails_the_comparison(reports):
    """The comparison is not vacuous: moving one reference value by 2e-5 puts every run out of tolerance."""
    shifted = {name: list(values) for name, values in reports["reference"]["params"].items()}
    shifted["2.bias"][0] += 2 * TOLERANCE
    for name in [*MESHES, HYBRID_TP]:
        assert largest_difference(_report(reports, name)["params"], shifted) > TOLERANCE


def test_lightning_sees_the_four_processes_of_the_two_nodes(reports):
    report = _report(reports, "lightning")
    assert (report["strategy"], report["world_size"], report["num_nodes"]) == ("lightning", 4, 2)


def test_a_failed_node_ends_the_other_nodes_of_its_run_at_once(monkeypatch):
    """A node that fails ends its run's other nodes (here one that would wait for its input forever),
    not the run limit; the run beside it is left to finish."""
    monkeypatch.setattr(sys.modules[__name__], "RUN_LIMIT_S", 600)
    python = [str(TORCH_BIN / "python"), "-c"]
    failing = subprocess.Popen([*python, "raise SystemExit(3)"], start_new_session=True)
    waiting = subprocess.Popen([*python, "import sys; sys.stdin.read()"], stdin=subprocess.PIPE, start_new_session=True)
    finishing = subprocess.Popen([*python, "pass"], start_new_session=True)
    try:
        ended = wait_for_runs({"run": [failing, waiting], "other": [finishing]})
    finally:
        waiting.stdin.close()
    assert ended == {"run": "ended when node 0 exited with 3"}
    assert (waiting.returncode, finishing.returncode) == (-signal.SIGKILL, 0)

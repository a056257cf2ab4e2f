"""The offline CLI never destroys or half-writes anything: stack names cannot reach
outside stacks/ or build/, a plan directory is replaced atomically and only when the
tool wrote it, anything that is not a plan is refused, and every error is one line."""

from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from platformctl.__main__ import main
from platformctl.atomic import replace_dir, write_text
from platformctl.engine import Plan, Resource
from platformctl.objects import DuplicateObjectError, check_unique_objects
from platformctl.plan import HELM_RELEASE, MARKER, is_k8s_object, manifest_files, plan_dir_replaceable
from platformctl.stack_names import MAX_LENGTH, InvalidStackName, check_stack_name
from tests.conftest import ROOT, STACKS, base_config, stack_plan

BAD_NAMES = ["../x", "a/b", "..", ".hidden", "UPPER", "", "a b", "x\n", "a..b", "a" * 101, "a" * 300]


def run_ctl(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "platformctl", *args], cwd=ROOT, capture_output=True, text=True, **kwargs)


def run_ctl_many(*arg_lists: list[str]) -> list[subprocess.CompletedProcess]:
    """Independent CLI runs, two at a time (each is mostly interpreter start-up)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda args: run_ctl(*args), arg_lists))


def one_line_error(result: subprocess.CompletedProcess, code: int) -> str:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def snapshot(path: Path) -> dict[str, bytes | None]:
    """Every file and directory under path (relative name -> bytes, None for a directory)."""
    if not path.exists():
        return {}
    return {
        str(p.relative_to(path)): (None if p.is_dir() else p.read_bytes())
        for p in sorted(path.rglob("*"), key=str)
    } | {".": None}


def tiny_stack(service: str) -> str:
    """A small valid stack file whose one service is named `service` (so plans differ by it)."""
    raw = base_config()
    raw["services"][0]["name"] = service
    raw["services"][0]["hosts"] = [f"{service}.example.com"]
    return yaml.safe_dump({"config": {f"inference-platform:{k}": v for k, v in raw.items()}})


@pytest.fixture(scope="module")
def stack_files(tmp_path_factory) -> list[Path]:
    """Three variants of one stack: a plan of each is told apart by its service name."""
    d = tmp_path_factory.mktemp("stacks")
    files = []
    for service in ("race-a", "race-b", "race-c"):
        f = d / f"Pulumi.{service}.yaml"
        f.write_text(tiny_stack(service))
        files.append(f)
    return files


@pytest.fixture(scope="module")
def saved_plan(tmp_path_factory, stack_files) -> Path:
    """A plan of the first variant, written by the CLI (never modified by tests: copy it)."""
    out = tmp_path_factory.mktemp("saved") / "race"
    result = run_ctl("plan", "race", "--stack-file", str(stack_files[0]), "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def plan_from_json(data: dict) -> Plan:
    resources = [
        Resource(
            urn=r["urn"], type=r["type"], name=r["name"], parent=r["parent"], custom=r["custom"], provider=r["provider"],
            depends_on=r["dependsOn"], protect=r["protect"], retain_on_delete=r["retainOnDelete"],
            delete_before_replace=r["deleteBeforeReplace"], ignore_changes=r["ignoreChanges"],
            inputs=r["inputs"], outputs=r.get("outputs", {}),
        )
        for r in data["resources"]
    ]
    return Plan(data["stack"], resources, data["outputs"])


def assert_complete_plan(out: Path) -> dict:
    """resources.json parses, and manifests/ holds exactly the files derived from it."""
    assert (out / MARKER).is_file()
    assert sorted(p.name for p in out.iterdir()) == sorted([MARKER, "manifests", "resources.json"])
    data = json.loads((out / "resources.json").read_text())
    expected = manifest_files(plan_from_json(data))
    written = {p.name: yaml.safe_load(p.read_text()) for p in (out / "manifests").iterdir()}
    assert sorted(written) == sorted(expected)
    assert written == expected
    return data


def assert_no_temporaries(parent: Path, *keep: str) -> None:
    assert sorted(p.name for p in parent.iterdir()) == sorted(keep)


# --------------------------------------------------------------------------- stack names


def test_bad_stack_names_exit_2_and_touch_nothing(tmp_path, capsys):
    sentinel = tmp_path / "sentinel"
    (sentinel / "keep").mkdir(parents=True)
    (sentinel / "keep" / "file").write_text("precious")
    # A name that would make build/<name> the sentinel itself.
    escaping = os.path.relpath(sentinel, ROOT / "build")
    out = tmp_path / "out"
    guarded = {p: snapshot(p) for p in (sentinel, ROOT / "build", ROOT / "stacks")}
    top = sorted(os.listdir(ROOT))
    names = [*BAD_NAMES, escaping]
    results = run_ctl_many(*(["plan", n] for n in names), *(["diff", n, "demo-dev"] for n in names))
    for name, planned, diffed in zip(names, results[:len(names)], results[len(names):], strict=True):
        line = one_line_error(planned, 2)
        assert repr(name[:80]) in line and "a-z, 0-9" in line, line
        # diff reads an existing path as a saved plan ('..', '' is '.'), anything else as a stack.
        line = one_line_error(diffed, 2)
        assert "is not a plan" in line if os.path.lexists(ROOT / name) else repr(name[:80]) in line and "a-z, 0-9" in line, line
        # The same rule in every other subcommand that takes a stack, in-process for speed.
        for args in (["plan", name, "--out", str(out)], ["policy", name], ["policy-config", name], ["policy", name, "--plan", str(ROOT)]):
            assert main(args) == 2
            err = capsys.readouterr().err
            assert len(err.splitlines()) == 1 and "invalid stack name" in err, err
    assert {p: snapshot(p) for p in guarded} == guarded
    assert sorted(os.listdir(ROOT)) == top
    assert not out.exists()


# --------------------------------------------------------------------------- --out


def test_out_refuses_what_the_tool_did_not_write(tmp_path, saved_plan, stack_files):
    user_dir = tmp_path / "mine"
    (user_dir / "sub").mkdir(parents=True)
    (user_dir / "sub" / "notes.txt").write_text("mine")
    user_file = tmp_path / "file.txt"
    user_file.write_text("mine")
    link = tmp_path / "link"
    link.symlink_to(saved_plan)
    # An earlier plan's layout with anything else in it is not ours to replace.
    not_a_plan = tmp_path / "plan-plus-notes"
    shutil.copytree(saved_plan, not_a_plan)
    (not_a_plan / MARKER).unlink()
    (not_a_plan / "notes.txt").write_text("mine")
    before = snapshot(tmp_path)
    for target in (user_dir, user_file, link, user_dir / "sub", not_a_plan):
        line = one_line_error(run_ctl("plan", "race", "--stack-file", str(stack_files[1]), "--out", str(target)), 2)
        assert str(target) in line and "refusing" in line, line
    assert snapshot(tmp_path) == before
    assert os.readlink(link) == str(saved_plan)


def test_out_replaces_a_previous_plan(tmp_path, saved_plan, stack_files):
    umask = os.umask(0o022)
    os.umask(umask)
    out = tmp_path / "race"
    shutil.copytree(saved_plan, out)
    (tmp_path / "empty").mkdir()
    # A plan written before plans carried the marker: exactly resources.json and manifests/.
    earlier = tmp_path / "earlier"
    shutil.copytree(saved_plan, earlier)
    (earlier / MARKER).unlink()
    for target in (out, tmp_path / "empty", earlier):
        result = run_ctl("plan", "race", "--stack-file", str(stack_files[1]), "--out", str(target))
        assert result.returncode == 0, result.stderr
        data = assert_complete_plan(target)
        assert "race-b" in json.dumps(data) and "race-a" not in json.dumps(data)
        assert stat.S_IMODE(target.stat().st_mode) == 0o777 & ~umask  # as readable as any new directory
    assert_no_temporaries(tmp_path, "race", "empty", "earlier")


# --------------------------------------------------------------------------- diff


def test_diff_of_anything_but_a_plan_exits_2(tmp_path, saved_plan, stack_files):
    garbage = {
        "text.json": b"this is not json\n",
        "list.json": b"[1, 2, 3]\n",
        "no-resources.json": b'{"stack": "x"}',
        "bad-resource.json": b'{"stack": "x", "resources": [{"urn": 1}]}',
        "bad-inputs.json": b'{"stack": "x", "resources": [{"urn": "u", "type": "t", "name": "n", "inputs": []}]}',
        "binary.bin": bytes(range(256)) * 4,
        "deep.json": b"[" * 100_000 + b"]" * 100_000,
        "empty.json": b"",
    }
    for name, content in garbage.items():
        (tmp_path / name).write_bytes(content)
    (tmp_path / "plan-without-resources").mkdir()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    args = [*(tmp_path / n for n in garbage), tmp_path / "plan-without-resources", fifo, "/dev/zero"]
    missing = ["no-such-stack", "./no/such/../path"]
    results = run_ctl_many(*(["diff", str(a), str(saved_plan)] for a in args), *(["diff", str(saved_plan), a] for a in missing))
    for arg, result in zip(args, results, strict=False):
        line = one_line_error(result, 2)
        assert str(arg) in line and "not a plan" in line, line
    for arg, result in zip(missing, results[len(args):], strict=True):
        line = one_line_error(result, 2)
        assert repr(arg) in line and "neither a saved plan" in line, line
    line = one_line_error(run_ctl("policy", "race", "--stack-file", str(stack_files[0]), "--plan", str(tmp_path / "list.json")), 2)
    assert "not a plan" in line, line


# --------------------------------------------------------------------------- concurrency


def test_concurrent_plans_of_one_stack_leave_one_complete_plan(tmp_path, stack_files):
    out = tmp_path / "race"
    seen = set()
    for _ in range(10):
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "platformctl", "plan", "race", "--stack-file", str(f), "--out", str(out)],
                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )
            for f in stack_files
        ]
        for p in procs:
            _, err = p.communicate()
            assert p.returncode == 0, err
        data = assert_complete_plan(out)
        seen.add(next(s for s in ("race-a", "race-b", "race-c") if s in json.dumps(data)))
        assert_no_temporaries(tmp_path, "race")
    assert seen  # which one wins is up to the scheduler; that one is complete is not


# --------------------------------------------------------------------------- file system errors

# Capabilities that let root write through any file mode (linux/capability.h).
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2
_PR_CAPBSET_DROP = 24


def _without_root_overrides() -> None:
    """In the child before exec: drop the capabilities that make root ignore a read-only mode.
    (Switching to another user would not do: the interpreter lives under root's home.)"""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _full_disk() -> None:
    # A write fails part-way as on a full disk (Python ignores SIGXFSZ, so write() gets EFBIG).
    resource.setrlimit(resource.RLIMIT_FSIZE, (16_384, 16_384))


@pytest.mark.parametrize("failure", ["read-only", "disk-full"])
def test_file_system_error_exits_1_and_keeps_the_previous_plan(failure, tmp_path, saved_plan, stack_files):
    build = tmp_path / "build"
    build.mkdir()
    out = build / "race"
    shutil.copytree(saved_plan, out)
    before = snapshot(build)
    preexec = _full_disk
    if failure == "read-only":
        build.chmod(0o555)
        preexec = _without_root_overrides if os.geteuid() == 0 else None
    try:
        result = run_ctl("plan", "race", "--stack-file", str(stack_files[1]), "--out", str(out), preexec_fn=preexec)
    finally:
        build.chmod(0o755)
    line = one_line_error(result, 1)
    assert line.startswith(f"cannot write the plan to {out}: {build}/"), line
    assert snapshot(build) == before
    assert_complete_plan(out)


# --------------------------------------------------------------------------- in-process units


def test_a_failed_or_interrupted_fill_leaves_the_target_and_no_temporary(tmp_path):
    target = tmp_path / "plan"
    target.mkdir()
    (target / MARKER).write_text("")
    (target / "resources.json").write_text("old")

    for error in (OSError(28, "No space left on device"), KeyboardInterrupt()):
        def fill(tmp: Path, error=error) -> None:
            (tmp / "resources.json").write_text("new")
            raise error

        with pytest.raises(type(error)):
            replace_dir(target, fill, plan_dir_replaceable)
        assert (target / "resources.json").read_text() == "old"
        assert_no_temporaries(tmp_path, "plan")


def test_racing_replacements_end_with_one_whole_copy(tmp_path):
    """Writers that reach the swap at the same moment (a barrier holds each until all are ready)."""
    target = tmp_path / "plan"
    writers = 3

    for _ in range(20):
        barrier = threading.Barrier(writers)

        def fill(tmp: Path, barrier=barrier) -> None:
            me = tmp.name
            (tmp / MARKER).write_text(me)
            for i in range(20):
                (tmp / f"part-{i}").write_text(me)
            barrier.wait()

        with ThreadPoolExecutor(max_workers=writers) as pool:
            list(pool.map(lambda _: replace_dir(target, fill, plan_dir_replaceable), range(writers)))
        contents = {p.read_text() for p in target.iterdir()}
        assert len(contents) == 1 and len(list(target.iterdir())) == 21
        assert_no_temporaries(tmp_path, "plan")


def test_write_text_replaces_a_file_whole_and_keeps_its_mode(tmp_path):
    path = tmp_path / "README.md"
    path.write_text("old")
    path.chmod(0o640)
    write_text(path, "new")
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) == 0o640
    assert_no_temporaries(tmp_path, "README.md")


def _k8s(urn_name: str, api_version: str, kind: str, name: str | None, namespace: str | None = None, rendered: str | None = None):
    meta = {k: v for k, v in (("name", name), ("namespace", namespace)) if v is not None}
    typ = f"kubernetes:{api_version if '/' in api_version else 'core/' + api_version}:{kind}"
    return Resource(
        urn=f"urn:pulumi:test-dev::inference-platform::{typ}::{urn_name}", type=typ, name=urn_name, parent=None,
        custom=True, provider=None, depends_on=[], protect=False, retain_on_delete=False, delete_before_replace=False,
        ignore_changes=[], inputs={"apiVersion": api_version, "kind": kind, "metadata": meta},
        outputs={"metadata": {"name": rendered}} if rendered else {},
    )


def test_two_resources_declaring_one_object_fail_naming_both():
    pairs = [
        # Versions of one group are one object.
        (_k8s("vs-a", "networking.istio.io/v1", "VirtualService", "chat", "chat"),
         _k8s("vs-b", "networking.istio.io/v1beta1", "VirtualService", "chat", "chat")),
        # Cluster-scoped: no namespace on either.
        (_k8s("ns-a", "v1", "Namespace", "models"), _k8s("ns-b", "v1", "Namespace", "models")),
        # An auto-named object counts under its rendered name.
        (_k8s("dep-a", "apps/v1", "Deployment", "chat-v1", "chat"),
         _k8s("dep-b", "apps/v1", "Deployment", None, "chat", rendered="chat-v1")),
    ]
    for a, b in pairs:
        with pytest.raises(DuplicateObjectError) as caught:
            check_unique_objects(Plan("test-dev", [a, b], {}))
        message = str(caught.value)
        assert a.urn in message and b.urn in message and "\n" not in message, message


def test_distinct_objects_pass_and_get_distinct_files():
    resources = [
        _k8s("cm-1", "v1", "ConfigMap", "c", "a-b"),
        _k8s("cm-2", "v1", "ConfigMap", "b-c", "a"),      # same file stem as cm-1 once joined
        _k8s("cm-3", "v1", "ConfigMap", "x:y", "a"),
        _k8s("cm-4", "v1", "ConfigMap", "x_y", "a"),      # same stem as cm-3 once sanitised
        _k8s("cm-5", "v1", "ConfigMap", "Case", "a"),
        _k8s("cm-6", "v1", "ConfigMap", "case", "a"),     # same on a case-insensitive file system
        _k8s("cm-7", "v1", "ConfigMap", "models"),        # cluster-wide ConfigMap vs the Namespace below
        _k8s("ns", "v1", "Namespace", "models"),
        _k8s("ing-1", "networking.k8s.io/v1", "Ingress", "web", "a"),
        _k8s("ing-2", "extensions.example.com/v1", "Ingress", "web", "a"),  # another group's kind
        _k8s("long", "v1", "ConfigMap", "n" * 253, "a"),
        _k8s("plain", "v1", "ConfigMap", "plain", "a"),
    ]
    plan = Plan("test-dev", resources, {})
    check_unique_objects(plan)
    files = manifest_files(plan)
    assert len(files) == len(resources)
    assert len({f.casefold() for f in files}) == len(files)
    assert all(len(f) <= 255 for f in files)
    assert "configmap-a-plain.yaml" in files  # names that do not collide keep the plain form
    assert manifest_files(Plan("other-dev", resources[::-1], {})).keys() == files.keys()  # order and stack do not matter


def test_stack_name_grammar():
    for name in ("demo-dev", "a", "0", "acme.prod_eu-1", "a" * MAX_LENGTH):
        assert check_stack_name(name) == name
    for name in BAD_NAMES + ["x/", "x\t", "-x", "x\\y", "é"]:
        with pytest.raises(InvalidStackName):
            check_stack_name(name)


@pytest.mark.parametrize("stack", STACKS)
def test_example_stacks_declare_each_object_once(stack):
    plan = stack_plan(stack)
    check_unique_objects(plan)
    assert len(manifest_files(plan)) == sum(1 for r in plan.resources if is_k8s_object(r) or r.type == HELM_RELEASE)

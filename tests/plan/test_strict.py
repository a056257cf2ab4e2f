"""`--strict`: a plan's warnings (`plan`) and advisory violations (`policy`) exit 1; without it
they are printed and exit 0."""

from __future__ import annotations

import pytest

from platformctl import policy
from platformctl.__main__ import main
from platformctl.engine import stack_settings
from platformctl.gpu_report import plan_warnings
from tests.conftest import ROOT, STACKS


def demo_dev_with_warnings(tmp_path) -> str:
    """demo-dev with resnet at 4 replicas per version (more than gpu-a100 offers beside its tuning
    and pipeline runs) and its Basic credentials over plain HTTP without the opt-in."""
    text = (ROOT / "stacks" / "Pulumi.demo-dev.yaml").read_text()
    edited = text.replace("        maxReplicas: 3\n", "        maxReplicas: 4\n", 1).replace(
        "    allowPlainHttpCredentials: true\n", "    allowPlainHttpCredentials: false\n", 1)
    assert edited.count("maxReplicas: 4") == 1 and "allowPlainHttpCredentials: false" in edited
    path = tmp_path / "Pulumi.demo-dev.yaml"
    path.write_text(edited)
    return str(path)


def test_a_capacity_warning_exits_1_with_strict_and_the_plan_is_still_written(tmp_path, capsys):
    stack_file = demo_dev_with_warnings(tmp_path)
    assert main(["plan", "demo-dev", "--stack-file", stack_file, "--out", str(tmp_path / "plan")]) == 0
    assert "warning: GPU group gpu-a100: " in capsys.readouterr().out
    assert main(["plan", "demo-dev", "--stack-file", stack_file, "--strict", "--out", str(tmp_path / "strict")]) == 1
    captured = capsys.readouterr()
    assert "warning: GPU group gpu-a100: " in captured.out
    # And resnet's Basic credentials over plain HTTP (no mesh.tls, no mesh.allowPlainHttpCredentials).
    assert "warning: services[resnet].auth.mode: basic without mesh.tls: " in captured.out
    assert captured.err.splitlines() == ["--strict: the plan has 2 warnings (the `warning:` lines above); exit 1"]
    assert (tmp_path / "strict" / "resources.json").is_file()


@pytest.mark.parametrize("stack", STACKS)
def test_every_example_stack_plans_without_a_warning(stack):
    # `make plan` and the CI example plan them with --strict: a warning would fail both.
    assert plan_warnings(stack_settings(stack)) == []


def test_a_plan_without_warnings_passes_strict(tmp_path, capsys):
    assert main(["plan", "studio-dev", "--strict", "--out", str(tmp_path / "plan")]) == 0
    assert "warning:" not in capsys.readouterr().out


def test_strict_is_refused_with_at(tmp_path, capsys):
    assert main(["plan", "demo-dev", "--at", "HEAD", "--strict", "--out", str(tmp_path / "plan")]) == 2
    assert "--strict does not apply with --at" in capsys.readouterr().err
    assert not (tmp_path / "plan").exists()


@pytest.mark.parametrize("strict, code", [(False, 0), (True, 1)])
def test_an_advisory_violation_exits_1_only_with_strict(tmp_path, capsys, monkeypatch, strict, code):
    assert main(["plan", "studio-dev", "--out", str(tmp_path / "plan")]) == 0
    advisory = policy.Violation("images-pinned", "advisory", "pin the image", None)
    monkeypatch.setattr(policy, "run_policies", lambda plan, config: [advisory])
    capsys.readouterr()
    argv = ["policy", "studio-dev", "--plan", str(tmp_path / "plan"), *(["--strict"] if strict else [])]
    assert main(argv) == code
    captured = capsys.readouterr()
    assert "0 mandatory and 1 advisory violations" in captured.out
    assert captured.err == ("--strict: 1 advisory violation (above); exit 1\n" if strict else "")

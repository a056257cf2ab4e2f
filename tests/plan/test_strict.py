"""`--strict`: a plan's warnings (`plan`) and advisory violations (`policy`) exit 1; without it
they are printed and exit 0."""

from __future__ import annotations

import pytest

from platformctl import policy
from platformctl.__main__ import main


def test_a_capacity_warning_exits_1_with_strict_and_the_plan_is_still_written(tmp_path, capsys):
    # demo-dev's gpu-a100 group cannot hold every version at max replicas: a warning.
    assert main(["plan", "demo-dev", "--out", str(tmp_path / "plan")]) == 0
    assert "warning: GPU group gpu-a100: " in capsys.readouterr().out
    assert main(["plan", "demo-dev", "--strict", "--out", str(tmp_path / "strict")]) == 1
    captured = capsys.readouterr()
    assert "warning: GPU group gpu-a100: " in captured.out
    # And resnet's Basic credentials over plain HTTP (no mesh.tls, no mesh.allowPlainHttpCredentials).
    assert "warning: services[resnet].auth.mode: basic without mesh.tls: " in captured.out
    assert captured.err.splitlines() == ["--strict: the plan has 2 warnings (the `warning:` lines above); exit 1"]
    assert (tmp_path / "strict" / "resources.json").is_file()


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

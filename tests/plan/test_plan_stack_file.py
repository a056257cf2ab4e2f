"""A saved plan remembers its stack file: `policy --plan` and `diff` read that file, say so, and
refuse a plan whose stack file changed since it was written."""

import json
from pathlib import Path

from platformctl.__main__ import main
from tests.conftest import ROOT


def _plan_from_copy(tmp_path: Path, stack: str, edit=lambda text: text) -> tuple[Path, Path]:
    stack_file = tmp_path / f"Pulumi.{stack}.yaml"
    stack_file.write_text(edit((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text()))
    out = tmp_path / "plan"
    assert main(["plan", stack, "--stack-file", str(stack_file), "--out", str(out)]) == 0
    return stack_file, out


def test_the_plan_marker_records_the_stack_file_path_and_sha256(tmp_path, capsys):
    import hashlib

    stack_file, out = _plan_from_copy(tmp_path, "demo-dev")
    record = json.loads((out / ".platformctl-plan").read_text())
    assert record["stackFile"] == str(stack_file.resolve())
    assert record["stackFileSha256"] == hashlib.sha256(stack_file.read_bytes()).hexdigest()


def test_policy_over_a_saved_plan_reads_the_stack_file_the_plan_was_made_from(tmp_path, capsys):
    # A GPU group renamed in the copy: read against stacks/Pulumi.acme-prod.yaml, its pods
    # select a group that stack file does not have (3 false mandatory violations).
    stack_file, out = _plan_from_copy(tmp_path, "acme-prod", lambda text: text.replace("gpu-l4", "gpu-t4"))
    capsys.readouterr()
    assert main(["policy", "acme-prod", "--plan", str(out)]) == 0
    report = capsys.readouterr().out
    assert report.splitlines()[0] == f"policy pack over stack acme-prod, stack file {stack_file} (recorded in the plan):"
    assert "0 mandatory" in report


def test_policy_refuses_a_saved_plan_whose_stack_file_changed_since_unless_allowed(tmp_path, capsys):
    stack_file, out = _plan_from_copy(tmp_path, "demo-dev")
    stack_file.write_text(stack_file.read_text() + "# edited after the plan\n")
    capsys.readouterr()
    assert main(["policy", "demo-dev", "--plan", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert "changed since the plan was written" in err and "--allow-changed-stack-file" in err
    assert main(["policy", "demo-dev", "--plan", str(out), "--allow-changed-stack-file"]) == 0


def test_diff_names_the_stack_file_of_a_saved_plan_and_refuses_it_when_changed_since(tmp_path, capsys):
    stack_file, out = _plan_from_copy(tmp_path, "demo-dev")
    capsys.readouterr()
    assert main(["diff", str(out), "demo-dev"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"old {out}: saved plan of stack demo-dev, rendered from {stack_file}"
    stack_file.write_text(stack_file.read_text() + "# edited after the plan\n")
    assert main(["diff", str(out), "demo-dev"]) == 2
    assert "changed since the plan was written" in capsys.readouterr().err

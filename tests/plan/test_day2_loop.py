"""The README's day-2 loop, run verbatim in a temporary clone: a branch that shifts a canary weight
and changes a component default diffs against main as both changes (the old side rendered from
main's stack file with main's code), and the loop exits 0 at every step."""

from __future__ import annotations

import subprocess

from tests.conftest import ROOT
from tests.support.clone import clone_env, git, make_clone
from tests.support.doc_shell import section_block

CANARY = ("          weight: 90\n", "          weight: 50\n", "          weight: 10\n")
RETRIES = "attempts: int = Field(default={},"


def _edit(path, old, new):
    text = path.read_text()
    assert text.count(old) >= 1, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def _branch_edits(clone):
    stack = clone / "stacks" / "Pulumi.acme-prod.yaml"
    _edit(stack, CANARY[0], CANARY[1])
    _edit(stack, CANARY[2], CANARY[1])
    _edit(clone / "components" / "settings" / "serving.py", RETRIES.format(3), RETRIES.format(4))


def test_the_readme_day2_loop_run_verbatim_shows_a_stack_edit_and_a_component_default_change(tmp_path):
    lines = [line for line in section_block(ROOT / "README.md", "The day-2 loop") if line.strip()]
    assert lines[0].startswith("git switch -c "), lines[0]
    assert lines[-1].startswith("pulumi up "), lines[-1]  # needs the Pulumi CLI and credentials
    clone = make_clone(tmp_path)
    # main's code differs from the source tree's, so the old side shows whose code rendered it:
    # 3 -> 4 main's, 2 -> 4 the source tree's, no change the branch's own
    _edit(clone / "components" / "settings" / "serving.py", RETRIES.format(2), RETRIES.format(3))
    git(clone, "commit", "--quiet", "-am", "retries 3")
    outputs = []
    for i, line in enumerate(lines[:-1]):
        run = subprocess.run(["bash", "-c", line], cwd=clone, env=clone_env(), capture_output=True, text=True)
        assert run.returncode == 0, f"{line}\nexit {run.returncode}\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
        outputs.append(run.stdout)
        if i == 0:  # "then edit the stack file (or the components)"
            _branch_edits(clone)
    [diff] = [out for line, out in zip(lines[:-1], outputs, strict=True) if " platformctl diff " in line]
    assert "at main (commit " in diff.splitlines()[0]
    assert "weight: 90 -> 50" in diff and "weight: 10 -> 50" in diff
    assert "retries.attempts: 3 -> 4" in diff  # main's own components rendered the old side
    assert "0 errors" in diff


def test_plan_at_an_unknown_revision_is_one_line_and_exit_2_writing_nothing(tmp_path, capsys):
    from platformctl.__main__ import main

    out = tmp_path / "plan"
    assert main(["plan", "demo-dev", "--at", "no-such-branch-42", "--out", str(out)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("--at 'no-such-branch-42': not a commit of ")
    assert not out.exists()

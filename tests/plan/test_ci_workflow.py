"""The CI example (.ci/example-github-workflow.yml) runs only commands this repository supports:
each `run:` command is a program the test knows, every platformctl subcommand and flag parses
with platformctl's own parser, every make target exists, every file it reads is in the
repository; and its offline job's plan and policy commands pass for one stack as written."""

from __future__ import annotations

import glob
import re
import shlex
import subprocess
from dataclasses import dataclass

import pytest
import yaml

from platformctl.__main__ import build_parser, main
from tests.conftest import ROOT

WORKFLOW = ROOT / ".ci" / "example-github-workflow.yml"
# The values the runner puts in place of the workflow's expressions, for the commands to parse.
EXPRESSIONS = {"github.event.pull_request.base.sha": "HEAD", "matrix.stack": "acme-prod"}
PUNCTUATION = ";&|()<>"
SHELL_WORDS = {"for", "in", "do", "done", "if", "then", "else", "fi", "exit", "continue", "true"}
# Programs other than python, pip, platformctl and make that a step may run.
OTHER_PROGRAMS = {"git", "basename", "pulumi"}


@dataclass(frozen=True)
class Command:
    words: tuple[str, ...]
    writes: tuple[str, ...]
    """Files the command's redirections create."""

    @property
    def program(self) -> str:
        return self.words[0].rsplit("/", 1)[-1]

    def __str__(self) -> str:
        return " ".join(self.words)


def _expression(match: re.Match) -> str:
    return EXPRESSIONS[match.group(1)]


def commands(script: str) -> list[Command]:
    """The simple commands of a `run:` script: continuations joined, comments dropped, split at
    the shell's separators; assignments and shell keywords left out."""
    text = re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", _expression, script.replace("\\\n", " "))
    out: list[Command] = []
    for line in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line)
        lexer = shlex.shlex(line, posix=True, punctuation_chars=PUNCTUATION)
        lexer.commenters = ""
        lexer.whitespace_split = True
        words: list[str] = []
        writes: list[str] = []
        tokens = list(lexer)
        for token in [*tokens, ";"]:
            if writes and writes[-1] is None:
                writes[-1] = token
            elif set(token) <= set(PUNCTUATION) and ">" in token:
                if words and words[-1].isdigit():
                    words.pop()  # a file descriptor: 2>/dev/null
                writes.append(None)
            elif set(token) <= set(PUNCTUATION):
                if words[:1] in (["for"], ["exit"], ["continue"]):
                    words = []  # a loop's list (test_every_stack_the_workflow_loops_over_exists), an exit status
                while words and (re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]) or words[0] in SHELL_WORDS or words[0] == "$"):
                    words = words[1:]
                if words:
                    out.append(Command(tuple(words), tuple(writes)))
                words, writes = [], []
            else:
                words.append(token)
    return out


def workflow_commands() -> list[Command]:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    return [c for job in workflow["jobs"].values() for step in job["steps"] if "run" in step
            for c in commands(step["run"])]


def _platformctl_args(c: Command) -> list[str] | None:
    if c.program.startswith("python") and c.words[1:3] == ("-m", "platformctl"):
        return list(c.words[3:])
    return None


def make_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z0-9_.-]+):(?!=)", (ROOT / "Makefile").read_text(), re.M))


def command_problems(c: Command, produced: set[str]) -> list[str]:
    """Why the repository does not support `c` (empty when it does)."""
    args = _platformctl_args(c)
    if args is not None:
        try:
            build_parser().parse_args(args)
        except SystemExit:
            return [f"{c}: platformctl does not take these arguments"]
        return []
    if c.program.startswith("python"):
        return [] if c.words[1:3] == ("-m", "venv") else [f"{c}: a Python module the workflow should not need"]
    if c.program == "make":
        missing = [t for t in c.words[1:] if not t.startswith("-") and "=" not in t and t not in make_targets()]
        return [f"{c}: no make target {t}" for t in missing]
    if c.program == "pip":
        files = [c.words[i + 1] for i, w in enumerate(c.words) if w == "-r"]
        return [f"{c}: no file {f}" for f in files if not (ROOT / f).is_file()]
    if c.program == "pulumi":
        packs = [c.words[i + 1] for i, w in enumerate(c.words) if w == "--policy-pack"]
        configs = [c.words[i + 1] for i, w in enumerate(c.words) if w == "--policy-pack-config"]
        return ([f"{c}: no policy pack {p}" for p in packs if not (ROOT / p / "PulumiPolicy.yaml").is_file()]
                + [f"{c}: {f} is written by no earlier command" for f in configs if f not in produced])
    if c.program in OTHER_PROGRAMS:
        return []
    return [f"{c}: {c.program} is no program the workflow is known to run"]


def test_the_workflow_holds_the_commands_the_checks_read():
    found = workflow_commands()
    subcommands = {(_platformctl_args(c) or [""])[0] for c in found}
    # plan, policy and diff in the offline job, policy-config before the real preview.
    assert {"plan", "policy", "diff", "policy-config"} <= subcommands
    assert any(c.program == "pulumi" for c in found) and any(c.program == "pip" for c in found)


def test_every_command_of_the_workflow_is_one_the_repository_supports():
    produced: set[str] = set()
    problems: list[str] = []
    for c in workflow_commands():
        problems += command_problems(c, produced)
        produced.update(c.writes)
    assert problems == []


def test_every_stack_the_workflow_loops_over_exists():
    loops = re.findall(r"for \w+ in (\S+);", WORKFLOW.read_text())
    assert loops and all(glob.glob(str(ROOT / pattern)) for pattern in loops)


@pytest.mark.parametrize("command,expected", [
    (".venv-plan/bin/python -m platformctl plan x --strikt", "platformctl does not take these arguments"),
    (".venv-plan/bin/python -m platformctl polcy x", "platformctl does not take these arguments"),
    (".venv-plan/bin/python -m platfromctl plan x", "a Python module the workflow should not need"),
    ("make plann STACK=x", "no make target plann"),
    (".venv-plan/bin/pip install -r requirements-plann.txt", "no file requirements-plann.txt"),
    ("pulumi preview --policy-pack policys", "no policy pack policys"),
    ("curl -o install.sh https://example.com", "curl is no program the workflow is known to run"),
])
def test_a_misspelt_command_or_a_flag_that_is_gone_is_found(command, expected):
    (problem,) = [p for c in commands(command) for p in command_problems(c, set())]
    assert expected in problem


def test_the_offline_job_plans_and_checks_one_stack_as_written(tmp_path, capsys):
    stack = "studio-dev"
    ran = []
    for c in workflow_commands():
        args = _platformctl_args(c)
        if args is None or args[0] not in ("plan", "policy") or "--at" in args:
            continue
        argv = [a.replace("$stack", stack).replace("build/", f"{tmp_path}/") for a in args]
        assert main(argv) == 0, capsys.readouterr()
        ran.append(args[0])
    assert ran == ["plan", "policy"]
    assert (tmp_path / stack / "resources.json").is_file()


def test_make_plan_plans_with_strict():
    dry_run = subprocess.run(["make", "-n", "plan", "STACK=demo-dev"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert dry_run.returncode == 0, dry_run.stderr
    assert any(line.endswith("-m platformctl plan demo-dev --strict") for line in dry_run.stdout.splitlines())

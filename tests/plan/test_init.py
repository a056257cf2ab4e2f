"""`platformctl init`: a new commented stack file that plans once its placeholders are filled in,
never over an existing one."""

from __future__ import annotations

import re

import pytest

from inference_platform.settings.cluster import NodeGroup
from platformctl.__main__ import main
from platformctl.init import describe


def init(tmp_path, *flags: str) -> int:
    return main(["init", "acme", "dev", "--stack-file", str(tmp_path / "Pulumi.acme-dev.yaml"), *flags])


# What init cannot know, per cluster mode and cache: the key paths it writes a placeholder at.
PLACEHOLDERS = {
    "existing": ["cluster.nodeGroups[cpu].selector.REPLACE-ME-node-label", "cluster.nodeGroups[a100].selector.REPLACE-ME-node-label",
                 "cluster.nodeGroups[l4].selector.REPLACE-ME-node-label"],
    "magnum": ["cluster.nodeGroups[a100].flavor", "cluster.nodeGroups[l4].flavor"],
    ("existing", "fileShare"): ["weightCaches.fileShare.server", "weightCaches.fileShare.path"],
    ("magnum", "fileShare"): [],
    ("existing", "s3"): ["weightCaches.s3.endpoint"],
    ("magnum", "s3"): ["weightCaches.s3.endpoint"],
}


@pytest.mark.parametrize("cluster", ["existing", "magnum"])
@pytest.mark.parametrize("cache", ["fileShare", "s3"])
def test_a_new_stack_file_is_refused_at_each_placeholder_then_plans_and_passes_the_policies_once_filled(
        tmp_path, capsys, cluster, cache):
    stack_file = tmp_path / "Pulumi.acme-dev.yaml"
    assert init(tmp_path, "--cluster", cluster, "--cache", cache, "--gpu-group", "a100=A100-80GB", "--gpu-group", "l4=L4-24GB") == 0
    expected = [f"inference-platform:{p}" for p in PLACEHOLDERS[cluster] + PLACEHOLDERS[cluster, cache]]
    told = capsys.readouterr().out
    assert f"replace its {len(expected)} REPLACE-ME values ({', '.join(expected)})" in told, told
    # Until filled in, the plan names each placeholder on a line of its own, and writes nothing.
    assert main(["plan", "acme-dev", "--stack-file", str(stack_file), "--out", str(tmp_path / "plan")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(": ")[2] for line in lines] == expected, lines
    assert all("is a placeholder (REPLACE-ME...) that `platformctl init` wrote; allowed: this stack's real value" in line
               for line in lines)
    assert not (tmp_path / "plan").exists()
    stack_file.write_text(re.sub("REPLACE-ME-", "filled-", stack_file.read_text()))
    assert main(["plan", "acme-dev", "--stack-file", str(stack_file), "--out", str(tmp_path / "plan")]) == 0
    assert main(["policy", "acme-dev", "--stack-file", str(stack_file), "--plan", str(tmp_path / "plan")]) == 0
    out = capsys.readouterr().out
    assert "acme-dev-cluster" in out and "0 mandatory" in out


def test_a_new_stack_file_comments_each_key_with_its_reference_text(tmp_path, capsys):
    assert init(tmp_path, "--gpu-group", "a100=A100-80GB") == 0
    text = (tmp_path / "Pulumi.acme-dev.yaml").read_text()
    assert f"# {describe(NodeGroup, 'max_nodes')}\n      maxNodes: 1\n" in text
    assert "# EDIT: " in text and "model: A100-80GB" in text


def test_init_refuses_to_overwrite_a_stack_file(tmp_path, capsys):
    existing = tmp_path / "Pulumi.acme-dev.yaml"
    existing.write_text("config: {}\n")
    assert init(tmp_path) == 2
    assert "exists; init never overwrites a stack file" in capsys.readouterr().err
    assert existing.read_text() == "config: {}\n"


@pytest.mark.parametrize("argv, message", [
    (["init", "Acme", "dev"], "customer 'Acme': 'Acme' is not a DNS label"),
    (["init", "acme", "an-environment-name-too-long"], "at most 20 characters"),
    (["init", "acme", "dev", "--gpu-group", "A100=A100-80GB"], "--gpu-group name 'A100': 'A100' is not a DNS label"),
    (["init", "acme", "dev", "--gpu-group", "a100=A100"], "unknown GPU model 'A100'; allowed: A100-40GB"),
    (["init", "acme", "dev", "--gpu-group", "a100"], "expected NAME=MODEL"),
    (["init", "acme", "dev", "--gpu-group", "cpu=T4-16GB"], "group name 'cpu' is taken"),
])
def test_init_refuses_bad_names_in_one_line_and_writes_nothing(tmp_path, capsys, argv, message):
    assert main([*argv, "--stack-file", str(tmp_path / "Pulumi.x.yaml")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, told", [
    (["init", "acme", "dev"], "plan it with: make plan STACK=acme-dev"),
    (["init", "acme", "dev", "--stack-file", "{tmp}/Pulumi.acme-dev.yaml"],
     "plan it with: .venv-plan/bin/python -m platformctl plan acme-dev --stack-file {tmp}/Pulumi.acme-dev.yaml"),
], ids=["stacks-dir", "stack-file"])
def test_init_suggests_a_plan_command_that_exists_after_the_readme_set_up(tmp_path, monkeypatch, capsys, argv, told):
    from platformctl import __main__ as cli

    monkeypatch.setattr(cli, "stack_path", lambda stack: tmp_path / f"Pulumi.{stack}.yaml")  # never into stacks/
    assert main([a.format(tmp=tmp_path) for a in argv]) == 0
    assert capsys.readouterr().out.strip().endswith(told.format(tmp=tmp_path))


def test_a_placeholder_left_in_a_stack_file_is_refused_wherever_it_is(tmp_path, capsys):
    # The plan refuses the marker at any key, also one init never writes, in any case.
    assert init(tmp_path, "--cluster", "magnum") == 0
    stack_file = tmp_path / "Pulumi.acme-dev.yaml"
    stack_file.write_text(stack_file.read_text().replace("inference-platform:services: []",
                                                         "inference-platform:mesh: {kialiAuth: replace-me}"))
    capsys.readouterr()
    assert main(["plan", "acme-dev", "--stack-file", str(stack_file), "--out", str(tmp_path / "plan")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "inference-platform:mesh.kialiAuth: the value 'replace-me' is a placeholder" in line


@pytest.mark.parametrize("environment, production", [("prod", "true"), ("prod-eu", "true"), ("production", "true"),
                                                     ("dev", "false"), ("preprod", "false")])
def test_init_writes_production_true_for_a_production_named_environment(tmp_path, capsys, environment, production):
    stack_file = tmp_path / f"Pulumi.acme-{environment}.yaml"
    assert main(["init", "acme", environment, "--cluster", "magnum", "--stack-file", str(stack_file)]) == 0
    assert f"\n  inference-platform:production: {production}\n" in stack_file.read_text()
    assert main(["plan", f"acme-{environment}", "--stack-file", str(stack_file), "--out", str(tmp_path / "plan")]) == 0

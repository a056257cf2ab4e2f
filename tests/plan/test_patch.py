"""`platformctl patch`: a model pipeline's StackPatch adds a canary version to a stack file.
Only the new version's lines and its base's weight line change, the result validates and
renders; anything wrong is refused with one line naming the file and key path, and the
file is left byte for byte as it was."""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from platformctl import atomic
from platformctl.__main__ import main
from platformctl.engine import render_stack, stack_settings
from platformctl.patch import canary_patch
from platformctl.stackfile import read_stack_config
from tests.conftest import ROOT, STACKS

SERVICES = "inference-platform:services"
SERVICE_STACKS = [s for s in STACKS if read_stack_config(ROOT / "stacks" / f"Pulumi.{s}.yaml").get(SERVICES)]
CANARY = "canary"
CONFIG_NAME = "tuned-ab12cd34-1"


def run_patch(*args: str) -> tuple[int, str, str]:
    """main() in-process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["patch", *map(str, args)])
    return code, out.getvalue(), err.getvalue()


def write_patch(path: Path, patch: dict) -> Path:
    path.write_text(json.dumps(patch))
    return path


def refused(code: int, stderr: str) -> str:
    assert code == 2, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_stacks_with_services():
    assert {"acme-prod", "demo-dev"} <= set(SERVICE_STACKS)


def test_canary_patch_is_the_pipeline_patch():
    assert canary_patch("resnet", "v1", "v3", "s3", "models/resnet/v3", "tuned-ab12cd34-1", 10) == {
        "kind": "StackPatch", "service": "resnet",
        "addVersion": {"from": "v1", "name": "v3", "weight": 10,
                       "modelRepository": {"cache": "s3", "path": "models/resnet/v3"},
                       "modelConfigName": "tuned-ab12cd34-1"}}


@pytest.fixture(scope="module", params=SERVICE_STACKS)
def patched(request, tmp_path_factory):
    """Each stack with services, its first service given a canary of its heaviest version."""
    stack = request.param
    d = tmp_path_factory.mktemp(stack)
    stack_file = d / f"Pulumi.{stack}.yaml"
    shutil.copyfile(ROOT / "stacks" / stack_file.name, stack_file)
    # The first service whose versions take a tuned config name (not those behind the OpenAI
    # frontend, which has no --model-config-name).
    service = next(s for s in read_stack_config(stack_file)[SERVICES]
                   if not any((v.get("llm") or {}).get("openai") is not None for v in s["versions"]))
    versions = service["versions"]
    base = max(range(len(versions)), key=lambda i: versions[i]["weight"])
    cache = versions[base]["modelRepository"]["cache"]
    patch = canary_patch(service["name"], versions[base]["name"], CANARY, cache, f"{service['name']}/{CANARY}",
                         CONFIG_NAME, 10)
    old = stack_file.read_text()
    code, out, err = run_patch(stack_file, write_patch(d / "patch.json", patch))
    assert code == 0, err
    return {"stack": stack, "file": stack_file, "old": old, "new": stack_file.read_text(), "out": out,
            "service": service, "base": base, "patch": d / "patch.json"}


def test_patch_changes_only_the_new_version_and_the_base_weight(patched):
    old, new = patched["old"].splitlines(True), patched["new"].splitlines(True)
    base = patched["service"]["versions"][patched["base"]]
    start = next(i for i, line in enumerate(new) if line.strip() == f"- name: {CANARY}")
    block = new[start:start + len(new) - len(old)]
    rest = new[:start] + new[start + len(block):]
    changed = [i for i, (a, b) in enumerate(zip(old, rest, strict=True)) if a != b]
    assert len(changed) == 1, changed
    weight_line = changed[0]
    assert old[weight_line].replace(f"weight: {base['weight']}", f"weight: {base['weight'] - 10}") == rest[weight_line]
    # The new version follows its base's last line, at its base's indentation.
    assert new[start - 1].strip() and not new[start - 1].lstrip().startswith("#")
    assert block[0].index("-") == next(line for line in old if line.strip() == f"- name: {base['name']}").index("-")
    assert patched["out"] == "".join(difflib.unified_diff(old, new, str(patched["file"]), str(patched["file"])))


def test_patched_stack_validates_and_renders(patched):
    name, base = patched["service"]["name"], patched["service"]["versions"][patched["base"]]
    settings = stack_settings(patched["file"])
    service = next(s for s in settings.services if s.name == name)
    names = [v.name for v in service.versions]
    assert names.index(CANARY) == names.index(base["name"]) + 1
    old_base = next(s for s in stack_settings(ROOT / "stacks" / patched["file"].name).services
                    if s.name == name).versions[patched["base"]]
    new_base, canary = service.versions[names.index(base["name"])], service.versions[names.index(CANARY)]
    assert (new_base.weight, canary.weight) == (old_base.weight - 10, 10)
    assert canary.model_dump(exclude={"name", "weight", "model_repository", "model_config_name", "tuning", "replicas"}) \
        == old_base.model_dump(exclude={"name", "weight", "model_repository", "model_config_name", "tuning", "replicas"})
    assert (canary.model_repository.path, canary.model_config_name) == (f"{name}/{CANARY}", CONFIG_NAME)

    plan = render_stack(patched["stack"], patched["file"])
    args = plan.get("kubernetes:apps/v1:Deployment", f"{name}-{CANARY}").inputs["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--model-config-name={CONFIG_NAME}" in args
    routes = [r for r in plan.of_type("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute") if r.name == f"{name}-httproute"]
    if routes:  # an LLM service: the canary is on its HTTPRoute, a pool `<service>-<version>` per version
        weights = {ref["name"].removeprefix(f"{name}-"): ref["weight"] for ref in routes[0].inputs["spec"]["rules"][0]["backendRefs"]}
    else:
        [vs] = [r for r in plan.of_type("kubernetes:networking.istio.io/v1:VirtualService") if r.name == f"{name}-virtualservice"]
        weights = {route["destination"]["subset"]: route["weight"] for route in vs.inputs["spec"]["http"][0]["route"]}
    assert weights[CANARY] == 10 and weights[base["name"]] == base["weight"] - 10 and sum(weights.values()) == 100


def test_applying_twice_is_refused_and_leaves_the_file(patched):
    before = patched["file"].read_bytes()
    code, out, err = run_patch(patched["file"], patched["patch"])
    names = [v["name"] for v in patched["service"]["versions"]]
    names.insert(patched["base"] + 1, CANARY)
    assert refused(code, err) == (
        f"{patched['file']}: invalid configuration: inference-platform:services[{patched['service']['name']}].versions[{patched['base'] + 1}].name: "
        f"version '{CANARY}' is already present; a patch adds a new version (present: {', '.join(names)})")
    assert out == "" and patched["file"].read_bytes() == before


# Comments in the places ruamel keeps them, flow and block values, and the keys a new
# version does not inherit.
LAYOUT = """\
# A stack for the patch's layout tests.
config:
  inference-platform:customer: test
  inference-platform:environment: dev
  inference-platform:cluster:
    mode: existing
    nodeGroups:
      - {name: cpu, minNodes: 1, maxNodes: 2, selector: {pool: cpu}}
      - name: gpu
        minNodes: 1
        maxNodes: 8
        selector: {pool: gpu}
        os: ubuntu-24.04
        gpu: {model: A100-80GB, perNode: 2}
  inference-platform:weightCaches:
    fileShare: {mode: existing, server: 10.0.0.2, path: /models}
  inference-platform:services:
    - name: svc
      hosts: [svc.example.com]
      versions:
        - name: v1   # the first release
          image: "nvcr.io/nvidia/tritonserver:25.01-py3"
          # canary split
          weight: 70  # of 100
          modelRepository: {cache: fileShare, path: svc/v1}
          replicas: 2
          tuning:
            model: svc
          modelConfigName: tuned-00000000-1
          gpu:
            group: gpu

          # after v1
        # before v2
        - name: v2
          image: 'nvcr.io/nvidia/tritonserver:25.01-py3'
          weight: 30
          modelRepository: {cache: fileShare, path: svc/v2}
          gpu: {group: gpu}
          # after v2
    # before the next service
    - name: other
      hosts: [other.example.com]
      versions:
        - {name: a, image: "nvcr.io/nvidia/tritonserver:25.01-py3", weight: 100, modelRepository: {cache: fileShare, path: o/a}, gpu: {group: gpu}}  # flow
        # after a
"""


@pytest.mark.parametrize(("service", "add", "edits"), [
    # Another repository: tuning, replicas and the old repository's config variant stay behind;
    # the end-of-line comment of a replaced key too. What followed v1 (a blank line, comments)
    # follows the new version.
    ("svc", {"from": "v1", "name": "v3", "weight": 10, "modelRepository": {"cache": "fileShare", "path": "svc/v3"}}, [
        ("weight: 70  # of 100", "weight: 60  # of 100"),
        ("""\
            group: gpu

          # after v1
""", """\
            group: gpu
        - name: v3
          image: "nvcr.io/nvidia/tritonserver:25.01-py3"
          # canary split
          weight: 10
          modelRepository: {cache: fileShare, path: svc/v3}
          gpu:
            group: gpu

          # after v1
""")]),
    # The last version of a service, all its weight given: new keys after the copied ones, a
    # replaced flow mapping stays one, the comments after it stay after the new version.
    ("svc", {"from": "v2", "name": "v4", "weight": 30, "modelConfigName": "x", "gpu": {"group": "gpu", "count": 2}}, [
        ("          weight: 30\n", "          weight: 0\n"),
        ("""\
          gpu: {group: gpu}
          # after v2
""", """\
          gpu: {group: gpu}
        - name: v4
          image: 'nvcr.io/nvidia/tritonserver:25.01-py3'
          weight: 30
          modelRepository: {cache: fileShare, path: svc/v2}
          gpu: {group: gpu, count: 2}
          modelConfigName: x
          # after v2
""")]),
    # A version written as one flow mapping: its end-of-line comment stays on its line, only the number changes.
    ("other", {"from": "a", "name": "b", "weight": 10, "modelRepository": {"cache": "fileShare", "path": "o/b"}}, [
        ("weight: 100, modelRepository: {cache: fileShare, path: o/a}, gpu: {group: gpu}}  # flow\n",
         "weight: 90, modelRepository: {cache: fileShare, path: o/a}, gpu: {group: gpu}}  # flow\n"
         '        - {name: b, image: "nvcr.io/nvidia/tritonserver:25.01-py3", weight: 10, '
         "modelRepository: {cache: fileShare, path: o/b}, gpu: {group: gpu}}\n")]),
])
def test_layout_and_comments_are_kept(tmp_path, service, add, edits):
    stack_file = tmp_path / "Pulumi.layout-dev.yaml"
    stack_file.write_text(LAYOUT)
    patch_file = tmp_path / "patch.yaml"  # a patch may be YAML as well as JSON
    patch_file.write_text(f"kind: StackPatch\nservice: {service}\naddVersion: {json.dumps(add)}\n")
    code, _, err = run_patch(stack_file, patch_file)
    assert code == 0, err
    expected = LAYOUT
    for old, new in edits:
        assert expected.count(old) == 1, old
        expected = expected.replace(old, new)
    assert stack_file.read_text() == expected


def test_blank_lines_after_the_base_stay_after_the_new_version(tmp_path):
    stack_file = tmp_path / "Pulumi.acme-prod.yaml"
    text = (ROOT / "stacks" / stack_file.name).read_text()
    assert text.count("          startupBudgetSeconds: 900\n        - name: v8\n") == 1
    stack_file.write_text(text.replace("startupBudgetSeconds: 900\n", "startupBudgetSeconds: 900\n\n"))
    patch = canary_patch("llm-chat", "v7", "v9", "fileShare", "llm-chat/v9", CONFIG_NAME, 10)
    del patch["addVersion"]["modelConfigName"]  # behind the OpenAI frontend: no tuned config name
    code, _, err = run_patch(stack_file, write_patch(tmp_path / "patch.json", patch))
    assert code == 0, err
    new = stack_file.read_text()
    assert "          startupBudgetSeconds: 900\n        - name: v9\n" in new
    assert "\n\n        - name: v8\n" in new and new.index("- name: v9") < new.index("- name: v8")


DEMO_PATCH = canary_patch("resnet", "v1", "v3", "fileShare", "resnet/v3", CONFIG_NAME, 10)


def demo_patch(**add) -> dict:
    """The demo stack's patch with addVersion keys changed (None: removed)."""
    patch = json.loads(json.dumps(DEMO_PATCH))
    for key, value in add.items():
        if value is None:
            del patch["addVersion"][key]
        else:
            patch["addVersion"][key] = value
    return patch


@pytest.fixture
def demo(tmp_path) -> Path:
    stack_file = tmp_path / "Pulumi.demo-dev.yaml"
    shutil.copyfile(ROOT / "stacks" / stack_file.name, stack_file)
    return stack_file


STACK_REFUSALS = {
    "unknown service": ({**DEMO_PATCH, "service": "nope"},
                        "inference-platform:services: no service named 'nope'; allowed: resnet"),
    "unknown from": (demo_patch(**{"from": "v9"}),
                     "inference-platform:services[resnet].versions: no version named 'v9' to copy (addVersion.from); "
                     "allowed: v1, v2"),
    "name present": (demo_patch(name="v2"), "inference-platform:services[resnet].versions[1].name: version 'v2' is "
                     "already present; a patch adds a new version (present: v1, v2)"),
    "from weight too low": (demo_patch(**{"from": "v2", "weight": 20}),
                            "inference-platform:services[resnet].versions[v2].weight: 10 is lower than the new version's "
                            "weight 20, which is taken from it; allowed: a new version's weight up to 10"),
    # The result's own problems, as `make plan` reports them.
    "cache not configured": (demo_patch(modelRepository={"cache": "s3", "path": "resnet/v3"}),
                             "inference-platform:services[resnet].versions[v3].modelRepository.cache: weight cache 's3' "
                             "is not configured under weightCaches; configured: fileShare"),
    "image not pinned": (demo_patch(image="nvcr.io/nvidia/tritonserver"),
                         "inference-platform:services[resnet].versions[v3].image: 'nvcr.io/nvidia/tritonserver' is not a "
                         "pinned image: add a :tag or an @sha256: digest"),
    "name not a DNS label": (demo_patch(name="V_3"), "inference-platform:services[resnet].versions[1].name: 'V_3' is not "
                             "a DNS label"),
}

PATCH_REFUSALS = {
    "unknown kind": ({**DEMO_PATCH, "kind": "StackDelete"},
                     ": kind: 'StackDelete' is not a patch this tool applies; allowed: StackPatch"),
    "unknown top-level key": ({**DEMO_PATCH, "removeVersion": {}},
                              ": removeVersion: unknown key; allowed keys here: addVersion, kind, service"),
    "unknown version key": (demo_patch(colour="blue"), ": addVersion.colour: unknown key; allowed keys here: "),
    "missing weight": (demo_patch(weight=None), ": addVersion.weight: required key is missing"),
    "weight as text": (demo_patch(weight="10"), ": addVersion.weight: '10' is not a weight; allowed: a whole number "
                       "0-100"),
    "missing kind": ({k: v for k, v in DEMO_PATCH.items() if k != "kind"}, ": kind: required key is missing"),
    "not a mapping": ([DEMO_PATCH], ":1:1: the document is a sequence; a patch is one mapping"),
}


@pytest.mark.parametrize("case", [*STACK_REFUSALS, *PATCH_REFUSALS])
def test_refusals_name_the_file_and_key_path_and_leave_the_file(demo, case):
    patch, message = STACK_REFUSALS.get(case) or PATCH_REFUSALS[case]
    patch_file = write_patch(demo.parent / "patch.json", patch)
    before = demo.read_bytes()
    code, out, err = run_patch(demo, patch_file)
    line = refused(code, err)
    prefix = f"{demo}: invalid configuration: " if case in STACK_REFUSALS else str(patch_file)
    assert line.startswith(prefix + message), line
    assert out == "" and demo.read_bytes() == before
    assert sorted(p.name for p in demo.parent.iterdir()) == ["Pulumi.demo-dev.yaml", "patch.json"]


def test_a_stack_without_services_is_refused(tmp_path):
    stack_file = tmp_path / "Pulumi.studio-dev.yaml"
    shutil.copyfile(ROOT / "stacks" / stack_file.name, stack_file)
    code, _, err = run_patch(stack_file, write_patch(tmp_path / "patch.json", DEMO_PATCH))
    assert refused(code, err).endswith("inference-platform:services: no service named 'resnet'; the stack has no services")


def test_a_layout_the_writer_would_normalise_is_kept_on_every_line_the_patch_does_not_change(demo):
    # Spacing inside a flow mapping that a YAML writer normalises: only the new version's lines
    # and the base's weight line change, the others stay byte for byte.
    text = demo.read_text().replace("{group: gpu-a100}", "{ group: gpu-a100 }")
    demo.write_text(text)
    code, _, err = run_patch(demo, write_patch(demo.parent / "patch.json", DEMO_PATCH))
    assert code == 0, err
    patched = demo.read_text()
    removed, added = _changed_lines(text, patched)
    assert removed == ["          weight: 90"] and added[0] == "          weight: 80", (removed, added)
    assert patched.count("gpu: { group: gpu-a100 }") == text.count("gpu: { group: gpu-a100 }") == 2


def _changed_lines(old: str, new: str) -> tuple[list[str], list[str]]:
    diff = list(difflib.ndiff(old.splitlines(), new.splitlines()))
    return [d[2:] for d in diff if d.startswith("- ")], [d[2:] for d in diff if d.startswith("+ ")]


def test_check_prints_the_diff_and_writes_nothing(demo):
    before = demo.read_bytes()
    code, out, err = run_patch(demo, write_patch(demo.parent / "patch.json", DEMO_PATCH), "--check")
    assert code == 0, err
    assert demo.read_bytes() == before
    assert "-          weight: 90\n+          weight: 80\n" in out and "+        - name: v3\n" in out
    assert sorted(p.name for p in demo.parent.iterdir()) == ["Pulumi.demo-dev.yaml", "patch.json"]


def test_a_failed_write_leaves_the_old_file(demo, monkeypatch):
    def full_disk(src, dst):
        raise OSError(28, "No space left on device", str(dst))

    monkeypatch.setattr(atomic.os, "replace", full_disk)
    before = demo.read_bytes()
    code, out, err = run_patch(demo, write_patch(demo.parent / "patch.json", DEMO_PATCH))
    assert code == 1 and err == f"{demo}: No space left on device\n"
    assert demo.read_bytes() == before
    assert sorted(p.name for p in demo.parent.iterdir()) == ["Pulumi.demo-dev.yaml", "patch.json"]


def test_the_command_line(demo):
    """The real command: a --check and a refusal, run side by side."""
    patch_file = write_patch(demo.parent / "patch.json", DEMO_PATCH)
    bad_file = write_patch(demo.parent / "bad.json", {**DEMO_PATCH, "service": "nope"})
    runs = [subprocess.Popen([sys.executable, "-m", "platformctl", "patch", str(demo), str(p), "--check"], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in (patch_file, bad_file)]
    (ok_out, ok_err), (bad_out, bad_err) = (r.communicate(timeout=120) for r in runs)
    assert runs[0].returncode == 0 and ok_err == "" and "+        - name: v3\n" in ok_out
    assert runs[1].returncode == 2 and bad_out == ""
    assert bad_err == f"{demo}: invalid configuration: inference-platform:services: no service named 'nope'; allowed: resnet\n"


def _patched(demo: Path, text: str) -> str:
    """Write text to the demo stack file and apply DEMO_PATCH: the patched text."""
    demo.write_bytes(text.encode())
    code, _, err = run_patch(demo, write_patch(demo.parent / "patch.json", DEMO_PATCH))
    assert code == 0, err
    return demo.read_bytes().decode()


def _same_stack(a: Path, b: Path) -> bool:
    return stack_settings(a) == stack_settings(b)


def _plain_patched(tmp_path) -> Path:
    plain = tmp_path / "plain" / "Pulumi.demo-dev.yaml"
    plain.parent.mkdir()
    shutil.copyfile(ROOT / "stacks" / plain.name, plain)
    code, _, err = run_patch(plain, write_patch(tmp_path / "plain" / "patch.json", DEMO_PATCH))
    assert code == 0, err
    return plain


def test_a_crlf_stack_file_keeps_its_crlf_line_endings(demo, tmp_path):
    text = demo.read_text().replace("\n", "\r\n")
    patched = _patched(demo, text)
    assert patched.count("\r\n") == patched.count("\n") > text.count("\n")
    removed, _ = _changed_lines(text.replace("\r\n", "\n"), patched.replace("\r\n", "\n"))
    assert removed == ["          weight: 90"]
    assert _same_stack(demo, _plain_patched(tmp_path))


def test_mixed_line_endings_are_refused_saying_which_and_why(demo):
    text = demo.read_text().replace("\n", "\r\n", 3)
    demo.write_bytes(text.encode())
    code, _, err = run_patch(demo, write_patch(demo.parent / "patch.json", DEMO_PATCH))
    assert refused(code, err) == (f"{demo}: mixed line endings (CRLF and LF); the patch writes lines with one of "
                                  "them, so save the file with one kind of line ending first")
    assert demo.read_bytes() == text.encode()


def test_anchors_aliases_and_merge_keys_stay_and_the_copy_is_written_out_in_full(demo, tmp_path):
    text = (demo.read_text()
            .replace("        - name: v1\n          image: nvcr.io/nvidia/tritonserver:25.01-py3\n",
                     "        - &v1\n          name: v1\n          image: &triton nvcr.io/nvidia/tritonserver:25.01-py3\n")
            .replace("        - name: v2\n          image: nvcr.io/nvidia/tritonserver:25.01-py3\n",
                     "        - <<: *v1\n          name: v2\n          image: *triton\n"))
    patched = _patched(demo, text)
    removed, added = _changed_lines(text, patched)
    assert removed == ["          weight: 90"] and added[0] == "          weight: 80"
    new_version = added[1:]
    assert new_version[0] == "        - name: v3"
    assert "          image: nvcr.io/nvidia/tritonserver:25.01-py3" in new_version
    assert not any("&" in line or "*" in line or "<<" in line for line in new_version), new_version
    assert _same_stack(demo, _plain_patched(tmp_path))


def test_a_four_space_stack_file_gets_the_new_version_in_four_spaces(demo, tmp_path):
    text = yaml.safe_dump(yaml.safe_load(demo.read_text()), indent=4, sort_keys=False)
    patched = _patched(demo, text)
    removed, added = _changed_lines(text, patched)
    assert removed == ["            weight: 90"] and added[0] == "            weight: 80"
    assert added[1:4] == ["        -   name: v3", "            image: nvcr.io/nvidia/tritonserver:25.01-py3",
                          "            weight: 10"]
    assert "                cache: fileShare" in added
    assert _same_stack(demo, _plain_patched(tmp_path))


def test_a_json_stack_file_is_patched_as_json_in_its_own_indentation(demo, tmp_path):
    text = json.dumps(yaml.safe_load(demo.read_text()), indent=2) + "\n"
    patched = _patched(demo, text)
    assert json.loads(patched)["config"][SERVICES][0]["versions"][1]["name"] == "v3"
    assert patched == json.dumps(json.loads(patched), indent=2) + "\n"
    assert _same_stack(demo, _plain_patched(tmp_path))


def test_a_json_stack_file_in_a_layout_json_does_not_write_is_refused(demo):
    text = json.dumps(yaml.safe_load(demo.read_text()), indent=2).replace('": ', '" : ') + "\n"
    demo.write_text(text)
    code, _, err = run_patch(demo, write_patch(demo.parent / "patch.json", DEMO_PATCH))
    assert refused(code, err).startswith(f"{demo}: a JSON stack file laid out other than json.dumps(indent=2)")
    assert demo.read_text() == text

"""docs/llm-model-repository.md's worked example, built from the page's own blocks (the layout, the
config.pbtxt, the model.json) into a temporary file share, holds what the planned pods of its
version read: the repository and tokenizer paths the container is given, the GPUs it gets, the
numbers the plan's memory fit used, and the vLLM metrics its HPA and objectives need.

What Triton's vLLM backend (triton-inference-server/vllm_backend, tag r25.01, src/model.py) reads:
- model.json in the model's version folder (pb_utils.get_model_dir(), _VLLM_ENGINE_ARGS_FILENAME),
  json.load'ed and passed as AsyncEngineArgs(**config): tests/catalogues/vllm-0.6.3-engine-args.txt;
- the model config must be decoupled (_init_engine_args asserts using_decoupled); KIND_GPU is refused
  with tensor_parallel_size > 1 (_validate_device_config);
- its vllm: metrics only with the config parameter REPORT_CUSTOM_METRICS "true" and
  disable_log_stats false (initialize, _get_bool_config_param; README.md "Triton Metrics").
What the OpenAI frontend (triton-inference-server/server, tag r25.01, python/openai/openai_frontend)
reads: every model the server loaded, by its folder name (engine/triton_engine.py _get_model_metadata),
and --tokenizer with transformers' AutoTokenizer.from_pretrained (engine/utils/tokenizer.py).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from inference_platform.serving.model_config import ModelConfigError, model_config_pb2, parse_model_config
from platformctl.engine import stack_settings
from tests.conftest import ROOT, stack_plan
from tests.plan.test_triton import DEPLOYMENT, HPA

PAGE = ROOT / "docs" / "llm-model-repository.md"
STACK, SERVICE, VERSION = "acme-prod", "llm-chat", "v7"
ADAPTER = "kubernetes:helm.sh/v3:Release"
RULES = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
# The settings' weight types vLLM's `dtype` takes under the same word (quantised ones have none).
VLLM_DTYPES = {"bfloat16", "float16", "float32"}
# The tokenizer files AutoTokenizer reads for a fast tokenizer with a chat template.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def engine_args() -> dict[str, tuple[str, tuple[str, ...]]]:
    """vLLM 0.6.3.post1's engine arguments the docs use: name -> (type, choices)."""
    rows = (ROOT / "tests" / "catalogues" / "vllm-0.6.3-engine-args.txt").read_text().splitlines()
    found = {}
    for row in rows:
        if row and not row.startswith("#"):
            name, kind, *rest = row.split()
            found[name] = (kind, tuple(rest[0].removeprefix("choices=").split(",")) if rest else ())
    return found


def vllm_backend_series() -> set[str]:
    """The series Triton's vLLM backend exports with REPORT_CUSTOM_METRICS (tests/catalogues)."""
    rows = (ROOT / "tests" / "catalogues" / "vllm-backend.txt").read_text().splitlines()
    return {re.sub(r"_(bucket|sum|count|total)$", "", r.split()[0]) for r in rows if r and not r.startswith("#")}


def page_files(text: str) -> dict[str, str]:
    """The page's file blocks: a line `` `/path/in/the/pod`: ``, then a fenced block -> its text."""
    return dict(re.findall(r"^`(/[^`\s]+)`:\n\n```[a-z]*\n(.*?)^```", text, re.M | re.S))


def page_layout(text: str) -> list[str]:
    """The paths of the page's layout tree (folders end in /), as the pod sees them."""
    block = re.search(r"^## The layout\n.*?^```text\n(.*?)^```", text, re.M | re.S)
    assert block, f"{PAGE.name} has no layout block under '## The layout'"
    paths, parents = [], []
    for line in block.group(1).splitlines():
        indent, name = re.match(r"([│├└─\s]*)(\S+)", line).groups()
        parents[len(indent) // 4:] = [name]
        paths.append("".join(parents))
    return paths


def build_example(text: str, share: Path, mount: str) -> None:
    """The page's layout under `share` (the pod's `mount`), each file with its block's text or empty."""
    files, layout = page_files(text), page_layout(text)
    assert set(files) <= set(layout), f"file blocks outside the layout: {sorted(set(files) - set(layout))}"
    for path in layout:
        assert path.startswith(f"{mount}/"), f"{path}: not on the file share ({mount})"
        local = share / path.removeprefix(f"{mount}/")
        if path.endswith("/"):
            local.mkdir(parents=True, exist_ok=True)
        else:
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_text(files.get(path, ""))


@dataclass(frozen=True)
class Pod:
    """What the version's planned pod reads."""

    args: dict[str, str]
    share_mount: str
    gpus: int
    vllm_series: frozenset[str]


def planned_pod(stack: str, service: str, version: str) -> Pod:
    plan = stack_plan(stack)
    name = f"{service}-{version}"
    spec = plan.get(DEPLOYMENT, name).inputs["spec"]["template"]["spec"]
    container = spec["containers"][0]
    claims = {v["name"] for v in spec["volumes"] if "persistentVolumeClaim" in v}
    [share_mount] = [m["mountPath"] for m in container["volumeMounts"] if m["name"] in claims]
    args = dict(a.removeprefix("--").partition("=")[::2] for a in container["args"])
    # The series behind the version's HPA metrics (prometheus-adapter's rules) and the service's
    # objective alerts (on its pods, by namespace and app label).
    [hpa] = [r for r in plan.of_type(HPA) if r.inputs["spec"]["scaleTargetRef"]["name"] == name]
    wanted = {m["pods"]["metric"]["name"] for m in hpa.inputs["spec"]["metrics"] if m["type"] == "Pods"}
    rules = [rule for r in plan.of_type(ADAPTER) if "prometheus-adapter" in r.name
             for rule in r.inputs["values"]["rules"]["custom"]]
    series = {re.search(r'__name__="([^"]+)"|^([\w:]+)', rule["seriesQuery"]).group(1) or ""
              for rule in rules if rule["name"]["as"] in wanted}
    for r in plan.of_type(RULES):
        series |= {s for group in r.inputs["spec"]["groups"] for rule in group["rules"]
                   if f'namespace="{service}"' in rule["expr"] for s in re.findall(r"vllm:\w+", rule["expr"])}
    return Pod(args=args, share_mount=share_mount, gpus=int(container["resources"]["limits"]["nvidia.com/gpu"]),
               vllm_series=frozenset(re.sub(r"_(bucket|sum|count)$", "", s) for s in series if s.startswith("vllm:")))


def version_llm(stack: str, service: str, version: str):
    [svc] = [s for s in stack_settings(stack).services if s.name == service]
    [ver] = [v for v in svc.versions if v.name == version]
    return ver.llm


def expected_engine_args(llm) -> dict:
    """The model.json values the version's settings (what the memory fit used) give."""
    expected = {"max_model_len": llm.max_context_tokens, "max_num_seqs": llm.max_concurrent_sequences,
                "tensor_parallel_size": llm.tensor_parallel_size, "gpu_memory_utilization": llm.memory_utilization,
                "kv_cache_dtype": llm.kv_cache_dtype}
    if llm.dtype in VLLM_DTYPES:
        expected["dtype"] = llm.dtype
    return expected


def _engine_arg_problems(config: dict, where: str) -> list[str]:
    catalogue, types = engine_args(), {"str": str, "int": int, "float": (int, float), "bool": bool}
    problems = []
    for key, value in config.items():
        if key not in catalogue:
            problems.append(f"{where}: {key} is not a vLLM engine argument the docs know "
                            f"(tests/catalogues/vllm-0.6.3-engine-args.txt)")
            continue
        kind, choices = catalogue[key]
        if not isinstance(value, types[kind]) or (kind != "bool" and isinstance(value, bool)):
            problems.append(f"{where}: {key} {value!r} is not a {kind}")
        elif choices and value not in choices:
            problems.append(f"{where}: {key} {value!r}; allowed: {', '.join(choices)}")
    return problems


def repository_problems(share: Path, pod: Pod, llm) -> list[str]:
    """What keeps the pod from serving the version as planned, from the files it would read."""
    def local(path: str) -> Path | None:
        inside = path == pod.share_mount or path.startswith(f"{pod.share_mount}/")
        return share / path.removeprefix(pod.share_mount).lstrip("/") if inside else None

    repository = local(pod.args["model-repository"])
    models = sorted(d for d in repository.iterdir() if d.is_dir()) if repository and repository.is_dir() else []
    if not models:
        return [f"{pod.args['model-repository']}: no model folder"]
    problems = []
    for model in models:
        where = f"{model.name}/config.pbtxt"
        try:
            config = parse_model_config((model / "config.pbtxt").read_text(), where)
        except (OSError, ModelConfigError) as err:
            problems.append(f"{where}: {err}")
            continue
        if config.backend != "vllm":
            problems.append(f"{where}: backend {config.backend!r}, the frontend runs --backend={pod.args['backend']}")
        if not config.model_transaction_policy.decoupled:
            problems.append(f"{where}: not decoupled (model_transaction_policy), which the vLLM backend requires")
        kinds = {model_config_pb2.ModelInstanceGroup.Kind.Name(g.kind) for g in config.instance_group}
        if kinds != {"KIND_MODEL"}:
            problems.append(f"{where}: instance_group {sorted(kinds)}; allowed: KIND_MODEL")
        metrics = config.parameters["REPORT_CUSTOM_METRICS"].string_value if "REPORT_CUSTOM_METRICS" in config.parameters else ""
        if pod.vllm_series and metrics.lower() != "true":
            problems.append(f"{where}: REPORT_CUSTOM_METRICS is not \"true\", so no {', '.join(sorted(pod.vllm_series))}")
        versions = [d for d in model.iterdir() if d.is_dir() and d.name.isdigit()]
        if not versions:
            problems.append(f"{model.name}: no numbered version folder")
            continue
        latest = max(versions, key=lambda d: int(d.name))
        where = f"{model.name}/{latest.name}/model.json"
        try:
            engine = json.loads((latest / "model.json").read_text())
        except (OSError, ValueError) as err:
            problems.append(f"{where}: {err}")
            continue
        problems += _engine_arg_problems(engine, where)
        for key, value in expected_engine_args(llm).items():
            if engine.get(key) != value:
                problems.append(f"{where}: {key} {engine.get(key)!r}, the version's settings give {value!r}")
        if engine.get("tensor_parallel_size", 1) != pod.gpus:
            problems.append(f"{where}: tensor_parallel_size {engine.get('tensor_parallel_size', 1)}, the pod has {pod.gpus} GPUs")
        if pod.vllm_series and engine.get("disable_log_stats", False):
            problems.append(f"{where}: disable_log_stats true exports no vLLM metrics")
        checkpoint = local(engine.get("model", ""))
        if checkpoint is None or not (checkpoint / "config.json").is_file():
            problems.append(f"{where}: model {engine.get('model')!r} is no checkpoint folder (config.json) on the share")
        tokenizer = engine.get("tokenizer")
        if tokenizer != pod.args.get("tokenizer"):
            problems.append(f"{where}: tokenizer {tokenizer!r}, the frontend reads {pod.args.get('tokenizer')!r}")
        folder = local(tokenizer or "")
        if folder is None or not all((folder / f).is_file() for f in TOKENIZER_FILES):
            problems.append(f"{where}: tokenizer {tokenizer!r} holds no {' and '.join(TOKENIZER_FILES)} on the share")
    return problems


@pytest.fixture(scope="module")
def pod() -> Pod:
    return planned_pod(STACK, SERVICE, VERSION)


@pytest.fixture(scope="module")
def llm():
    return version_llm(STACK, SERVICE, VERSION)


@pytest.fixture
def share(tmp_path, pod) -> Path:
    share = tmp_path / "share"
    build_example(PAGE.read_text(), share, pod.share_mount)
    return share


def test_the_pages_example_serves_the_planned_version(share, pod, llm):
    assert pod.vllm_series, "the planned version reads no vLLM series: the page's REPORT_CUSTOM_METRICS is for nothing"
    assert pod.vllm_series <= vllm_backend_series()
    assert repository_problems(share, pod, llm) == []


def test_the_pages_blocks_are_the_example_the_test_builds():
    text = PAGE.read_text()
    files = page_files(text)
    assert sorted(Path(p).name for p in files) == ["config.pbtxt", "model.json"]
    model_json = next(body for path, body in files.items() if path.endswith("/model.json"))
    assert _engine_arg_problems(json.loads(model_json), "model.json") == []
    # The table of stack keys gives the example's values.
    for key, value in expected_engine_args(version_llm(STACK, SERVICE, VERSION)).items():
        assert re.search(rf"^\|[^|\n]*\| `{key}`[^|\n]*\| `?{re.escape(json.dumps(value))}`? \|$", text, re.M), key


def test_the_model_clients_call_on_the_llm_page_is_the_example_models_folder():
    calls = set(re.findall(r'"model": "([^"]+)"', (ROOT / "docs" / "llm.md").read_text()))
    models = {Path(p).parent.name for p in page_files(PAGE.read_text()) if p.endswith("/config.pbtxt")}
    assert calls and calls == models


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


MODEL = "llm-chat/v7/llama-3.1-8b-instruct"
BROKEN = {
    "context longer than planned": (f"{MODEL}/1/model.json", '"max_model_len": 8192', '"max_model_len": 131072', "max_model_len"),
    "default concurrency": (f"{MODEL}/1/model.json", '  "max_num_seqs": 32,\n', "", "max_num_seqs"),
    "an engine argument vLLM lacks": (f"{MODEL}/1/model.json", '"max_num_seqs"', '"max_concurrent_sequences"', "not a vLLM engine argument"),
    "a dtype vLLM refuses": (f"{MODEL}/1/model.json", '"kv_cache_dtype": "auto"', '"kv_cache_dtype": "bfloat16"', "kv_cache_dtype"),
    "metrics off in the engine": (f"{MODEL}/1/model.json", '"disable_log_stats": false', '"disable_log_stats": true', "disable_log_stats"),
    "another tokenizer": (f"{MODEL}/1/model.json", '"/models/llm-chat/tokenizer"', '"/models/llm-chat/v7/tokenizer"', "tokenizer"),
    "a Hub name for the checkpoint": (f"{MODEL}/1/model.json", '"/models/llm-chat/v7/llama-3.1-8b-instruct/1/checkpoint"',
                                      '"meta-llama/Llama-3.1-8B-Instruct"', "no checkpoint folder"),
    "no metrics from the backend": (f"{MODEL}/config.pbtxt", '"REPORT_CUSTOM_METRICS"', '"REPORT_METRICS"', "REPORT_CUSTOM_METRICS"),
    "one instance per GPU": (f"{MODEL}/config.pbtxt", "KIND_MODEL", "KIND_GPU", "instance_group"),
    "not decoupled": (f"{MODEL}/config.pbtxt", "decoupled: true", "decoupled: false", "decoupled"),
    "a config Triton cannot read": (f"{MODEL}/config.pbtxt", 'backend: "vllm"', 'backend: vllm"', "invalid Triton model config"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_repository_the_pod_could_not_serve_as_planned_is_refused(case, share, pod, llm):
    file, old, new, said = BROKEN[case]
    _edit(share / file, old, new)
    problems = repository_problems(share, pod, llm)
    assert any(said in p for p in problems), problems


def test_a_missing_tokenizer_file_or_model_folder_is_refused(share, pod, llm):
    (share / "llm-chat" / "tokenizer" / "tokenizer_config.json").unlink()
    assert any("tokenizer_config.json" in p for p in repository_problems(share, pod, llm))
    shutil.rmtree(share / "llm-chat" / "v7" / "llama-3.1-8b-instruct")
    assert repository_problems(share, pod, llm) == ["/models/llm-chat/v7: no model folder"]


def test_a_version_whose_settings_change_no_longer_matches_the_page(share, pod, llm):
    wider = llm.model_copy(update={"max_context_tokens": 16384, "tensor_parallel_size": 2})
    problems = repository_problems(share, Pod(pod.args, pod.share_mount, 2, pod.vllm_series), wider)
    assert any("max_model_len 8192" in p for p in problems) and any("tensor_parallel_size 1" in p for p in problems)


# What the pod's own check (model_tools/llm_engine_check.py, its first init container) refuses of
# the cases above: the engine's arguments and metrics. The rest fail in Triton or the frontend.
# Case -> what its line names.
POD_CHECKED = {"context longer than planned": "max_model_len is 131072", "default concurrency": "max_num_seqs is not set",
               "a dtype vLLM refuses": "kv_cache_dtype is bfloat16", "metrics off in the engine": "disable_log_stats",
               "a Hub name for the checkpoint": "is not a folder in the pod",
               "no metrics from the backend": "REPORT_CUSTOM_METRICS"}


def planned_check(stack: str, service: str, version: str) -> list[str]:
    """The command line of the version's engine check, as its pod runs it."""
    spec = stack_plan(stack).get(DEPLOYMENT, f"{service}-{version}").inputs["spec"]["template"]["spec"]
    [check] = [c for c in spec.get("initContainers", []) if c["name"] == "check-engine-args"]
    return [*check["command"], *check["args"]]


def run_on_share(command: list[str], share: Path, mount: str) -> subprocess.CompletedProcess:
    """Run `command` against `share` as the pod would with the share mounted at `mount`: the paths
    in its arguments and in the share's files point into `share` instead."""
    for file in share.rglob("*"):
        if file.is_file():
            file.write_text(file.read_text().replace(f'"{mount}/', f'"{share}/'))
    rebased = [a.replace(f"={mount}/", f"={share}/") for a in command]
    return subprocess.run([sys.executable, *rebased[1:]], capture_output=True, text=True, timeout=60)


def test_the_pods_engine_check_passes_the_pages_example(share, pod):
    done = run_on_share(planned_check(STACK, SERVICE, VERSION), share, pod.share_mount)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("case", sorted(POD_CHECKED))
def test_the_pods_engine_check_stops_a_repository_that_would_not_run_as_planned(case, share, pod):
    file, old, new, _ = BROKEN[case]
    _edit(share / file, old, new)
    done = run_on_share(planned_check(STACK, SERVICE, VERSION), share, pod.share_mount)
    assert done.returncode == 1 and POD_CHECKED[case] in done.stderr, done.stderr
    assert all(line.startswith(f"inference-platform:services[{SERVICE}].versions[{VERSION}].llm: ")
               for line in done.stderr.splitlines()), done.stderr

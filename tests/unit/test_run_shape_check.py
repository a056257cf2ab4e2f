"""A tuning run's first step: the model's config.pbtxt, read from the weight cache, against the
shapes Perf Analyzer will send (model_tools/perf_shapes.py, the plan's own rule), for the models
the plan cannot see."""

from __future__ import annotations

from pathlib import Path

import pytest

from inference_platform.settings.loader import parse_settings
from inference_platform.tuning.perf_inputs import unseen_tuned_models
from model_tools import perf_shapes
from tests.conftest import base_config
from tests.support.model_configs import TEXT_MODEL

KEY = "inference-platform:services[embed].versions[v1].tuning"
IMAGE_MODEL = """name: "resnet50"
platform: "onnxruntime_onnx"
max_batch_size: 32
input [{ name: "input" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] }]
output [{ name: "logits" data_type: TYPE_FP32 dims: [ 1000 ] }]
"""
TOKENS = ["--shape=input_ids:128", "--shape=attention_mask:128", "--shape=token_type_ids:128"]


def run(tmp_path: Path, text: str | None, *shapes: str, model: str = "bge-large") -> tuple[int, list[str]]:
    config = tmp_path / "config.pbtxt"
    if text is not None:
        config.write_text(text)
    code, lines = perf_shapes.check(config, "s3 embed/v1/bge-large/config.pbtxt", model, KEY,
                                    dict(perf_shapes.parse_shape(s.removeprefix("--shape=")) for s in shapes))
    return code, lines


def test_a_text_model_without_shapes_fails_naming_each_key_to_set_and_the_dims(tmp_path):
    code, lines = run(tmp_path, TEXT_MODEL, "--shape=input_ids:128")
    assert code == 2
    assert [line.split(": ", 1)[0] for line in lines] == [f"{KEY}.shapes.attention_mask", f"{KEY}.shapes.token_type_ids"]
    assert "variable dims [-1]" in lines[0] and "shapes.attention_mask: [<n>]" in lines[0]
    assert "s3 embed/v1/bge-large/config.pbtxt" in lines[0]


def test_a_text_model_with_a_shape_per_variable_input_passes(tmp_path):
    assert run(tmp_path, TEXT_MODEL, *TOKENS) == (0, [])


def test_a_model_with_fixed_inputs_passes_without_shapes(tmp_path):
    assert run(tmp_path, IMAGE_MODEL, model="resnet50") == (0, [])


def test_the_command_line_prints_one_line_per_problem_and_exits_2(tmp_path, capsys):
    (tmp_path / "config.pbtxt").write_text(TEXT_MODEL)
    code = perf_shapes.main([f"--config={tmp_path / 'config.pbtxt'}", "--where=w", "--model=bge-large", f"--key={KEY}",
                             "--shape=input_ids:128", "--shape=attention_mask:128"])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f"perf_shapes: {KEY}.shapes.token_type_ids: ")


@pytest.mark.parametrize("max_batch_size,good,bad", [
    # Batching: the config's dims leave the batch dimension out, and so does the shape.
    (8, "x:128", "x:1,128"),
    # No batching: every dim is the client's, the first one too.
    (0, "x:1,128", "x:128"),
])
def test_the_batch_dimension_is_in_the_shape_only_when_the_model_does_not_batch(tmp_path, max_batch_size, good, bad):
    config = f'max_batch_size: {max_batch_size}\ninput [{{ name: "x" data_type: TYPE_INT64 dims: [ {"-1, -1" if not max_batch_size else "-1"} ] }}]\n'
    assert run(tmp_path, config, f"--shape={good}")[0] == 0
    code, lines = run(tmp_path, config, f"--shape={bad}")
    assert code == 2 and "does not fit the input's dims" in lines[0]


def test_a_reshaped_input_takes_the_shape_of_its_dims_not_of_its_reshape(tmp_path):
    # Clients send `dims`; `reshape` is what the model sees (Triton's metadata lists dims).
    config = 'max_batch_size: 8\ninput [{ name: "x" data_type: TYPE_FP32 dims: [ -1 ] reshape { shape: [ 1, -1 ] } }]\n'
    assert run(tmp_path, config, "--shape=x:64")[0] == 0
    assert run(tmp_path, config, "--shape=x:1,64")[0] == 2


def test_an_optional_input_with_variable_dims_still_needs_a_shape(tmp_path):
    # Perf Analyzer generates data for every input, optional ones too (data_loader.cc GenerateData).
    config = TEXT_MODEL.replace('{ name: "token_type_ids" data_type: TYPE_INT64 dims: [ -1 ] }',
                                '{ name: "token_type_ids" data_type: TYPE_INT64 dims: [ -1 ] optional: true }')
    code, lines = run(tmp_path, config, "--shape=input_ids:128", "--shape=attention_mask:128")
    assert code == 2 and lines[0].startswith(f"{KEY}.shapes.token_type_ids: ")


def test_a_shape_tensor_cannot_be_tuned_with_generated_data(tmp_path):
    config = 'max_batch_size: 0\ninput [{ name: "s" data_type: TYPE_INT32 dims: [ 2 ] is_shape_tensor: true }]\n'
    code, lines = run(tmp_path, config)
    assert code == 2 and lines[0].startswith(f"{KEY}: input 's'") and "shape tensor" in lines[0]


def test_a_model_without_a_config_file_is_not_refused(tmp_path):
    code, lines = run(tmp_path, None)
    assert code == 0 and "Triton completes the config" in lines[0]


def test_a_config_that_does_not_parse_fails_the_run_with_exit_4(tmp_path):
    code, lines = run(tmp_path, "max_batch_size: eight\n")
    assert code == 4 and len(lines) == 1 and "invalid Triton model config" in lines[0]


def test_a_name_outside_the_bare_key_grammar_is_quoted_in_the_key():
    assert perf_shapes.key(KEY, ("shapes", "input:0")) == f'{KEY}.shapes["input:0"]'


def test_the_plan_says_which_runs_check_their_shapes_when_they_start(tmp_path, monkeypatch):
    raw = base_config()
    version = raw["services"][0]["versions"][0]
    version["tuning"] = {"model": "embed"}
    assert unseen_tuned_models(parse_settings(raw, "stacks/Pulumi.test.yaml", frozenset())) == [
        "tuning: services[svc].versions[v1]: model 'embed' is not uploaded by this stack (fileShare "
        f"{version['modelRepository']['path'].strip('/')}/embed/config.pbtxt); its run checks tuning.shapes against "
        "that config before its Triton server starts"]
    # A model the stack uploads is checked by the plan itself: no line.
    (tmp_path / "repo" / "embed").mkdir(parents=True)
    (tmp_path / "repo" / "embed" / "config.pbtxt").write_text(IMAGE_MODEL.replace("resnet50", "embed"))
    monkeypatch.chdir(tmp_path)
    raw["weightCaches"]["s3"] = {"endpoint": "https://s3.example.com", "bucket": "weights",
                                 "uploads": [{"source": "repo", "prefix": "svc"}]}
    version["modelRepository"] = {"cache": "s3", "path": "svc"}
    secrets = {"s3AccessKeyId": "key", "s3SecretAccessKey": "secret"}
    assert unseen_tuned_models(parse_settings(raw | secrets, "stacks/Pulumi.test.yaml", frozenset(secrets))) == []

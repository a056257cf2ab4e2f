"""Tuning presets rendered into Triton config variants: checked with Triton's own ModelConfig
protobuf, refused where Triton could not run them, planned into the uploads that carry them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from inference_platform.serving.model_config import model_config_pb2, parse_model_config
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.tuning import BUILTIN_PRESETS, BatchingPreset
from inference_platform.tuning.presets import PresetError, all_presets, preset_variant, upload_variants
from platformctl.diff import diff_plans
from tests.conftest import base_config, render_raw

UPLOAD = "pulumi-python:dynamic/s3:Upload"
KIND_GPU = model_config_pb2.ModelInstanceGroup.KIND_GPU
KIND_CPU = model_config_pb2.ModelInstanceGroup.KIND_CPU

# An image classifier as ONNX Runtime serves it: batching, CPU instances, a batcher with priorities.
ONNX = """
name: "resnet50"
platform: "onnxruntime_onnx"
max_batch_size: 32
input [ { name: "input" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 3, 224, 224 ] } ]
output [ { name: "probabilities" data_type: TYPE_FP32 dims: [ 1000 ] label_filename: "labels.txt" } ]
instance_group [ { count: 4 kind: KIND_CPU } ]
dynamic_batching { preferred_batch_size: [ 8, 16 ] max_queue_delay_microseconds: 500 priority_levels: 2 default_priority_level: 1 }
optimization { execution_accelerators { gpu_execution_accelerator [ { name: "tensorrt" } ] } }
parameters { key: "intra_op_thread_count" value: { string_value: "4" } }
"""

# A TensorRT engine pinned to GPU 0, without a batcher.
TENSORRT = """
name: "bert_trt"
platform: "tensorrt_plan"
max_batch_size: 8
input [
  { name: "input_ids" data_type: TYPE_INT32 dims: [ 128 ] },
  { name: "attention_mask" data_type: TYPE_INT32 dims: [ 128 ] }
]
output [ { name: "logits" data_type: TYPE_FP32 dims: [ 2 ] } ]
instance_group [ { count: 1 kind: KIND_GPU gpus: [ 0 ] } ]
"""

# A model without a batch dimension (max_batch_size 0).
NO_BATCH = """
name: "detector"
backend: "onnxruntime"
input [ { name: "image" data_type: TYPE_UINT8 dims: [ -1, -1, 3 ] } ]
output [ { name: "boxes" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
"""

ENSEMBLE = """
name: "pipeline"
platform: "ensemble"
max_batch_size: 8
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "LOGITS" data_type: TYPE_FP32 dims: [ 2 ] } ]
ensemble_scheduling { step [ { model_name: "bert_trt" model_version: -1 input_map { key: "input_ids" value: "TEXT" }
                               output_map { key: "logits" value: "LOGITS" } } ] }
"""

# A stateful model: Triton's sequence batcher keeps a sequence on one instance.
SEQUENCE = """
name: "streaming_asr"
backend: "python"
max_batch_size: 4
input [ { name: "AUDIO" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "TEXT" data_type: TYPE_STRING dims: [ 1 ] } ]
model_transaction_policy { decoupled: true }
sequence_batching { max_sequence_idle_microseconds: 5000000 }
"""


def preset_fields_cleared(config):
    """The config without what a preset sets: everything else must come through unchanged."""
    config = type(config).FromString(config.SerializeToString())
    for name in ("instance_group", "max_batch_size"):
        config.ClearField(name)
    config.dynamic_batching.ClearField("max_queue_delay_microseconds")
    config.dynamic_batching.ClearField("preferred_batch_size")
    if config.dynamic_batching == model_config_pb2.ModelDynamicBatching():
        config.ClearField("dynamic_batching")  # a batcher the preset added, with nothing else in it
    return config


@pytest.mark.parametrize("preset", sorted(BUILTIN_PRESETS))
@pytest.mark.parametrize("base", [ONNX, TENSORRT], ids=["onnxruntime", "tensorrt_plan"])
def test_every_builtin_preset_renders_a_config_triton_reads(base, preset):
    chosen = BUILTIN_PRESETS[preset]
    text = preset_variant(base, chosen, f"model/config.pbtxt with preset {preset!r}")
    variant, original = parse_model_config(text, "variant"), parse_model_config(base, "base")
    assert [(g.count, g.kind, list(g.gpus)) for g in variant.instance_group] == [(chosen.instance_count, KIND_GPU, [])]
    assert variant.HasField("dynamic_batching")
    assert variant.dynamic_batching.max_queue_delay_microseconds == chosen.max_queue_delay_microseconds
    assert list(variant.dynamic_batching.preferred_batch_size) == chosen.preferred_batch_sizes == []
    assert variant.max_batch_size == original.max_batch_size
    # Name, platform, tensors, optimisation, parameters and the batcher's priorities stay as they were.
    assert preset_fields_cleared(variant) == preset_fields_cleared(original)


def test_latency_runs_two_instances_without_waiting_and_throughput_waits_to_fill_batches():
    latency = parse_model_config(preset_variant(ONNX, BUILTIN_PRESETS["latency"], "resnet50"), "latency")
    throughput = parse_model_config(preset_variant(ONNX, BUILTIN_PRESETS["throughput"], "resnet50"), "throughput")
    assert (latency.instance_group[0].count, latency.dynamic_batching.max_queue_delay_microseconds) == (2, 0)
    assert (throughput.instance_group[0].count, throughput.dynamic_batching.max_queue_delay_microseconds) == (1, 2000)


def test_a_preset_sets_batch_size_preferred_sizes_and_cpu_instances():
    preset = BatchingPreset(max_batch_size=64, preferred_batch_sizes=[16, 64], max_queue_delay_microseconds=100,
                            instance_count=3, instance_kind="cpu")
    variant = parse_model_config(preset_variant(ONNX, preset, "resnet50"), "variant")
    assert variant.max_batch_size == 64
    assert list(variant.dynamic_batching.preferred_batch_size) == [16, 64]
    assert variant.dynamic_batching.max_queue_delay_microseconds == 100
    assert [(g.count, g.kind) for g in variant.instance_group] == [(3, KIND_CPU)]


def test_a_preset_gives_a_model_without_a_batch_dimension_one_only_when_it_says_so():
    variant = parse_model_config(preset_variant(NO_BATCH, BatchingPreset(max_batch_size=4), "detector"), "variant")
    assert variant.max_batch_size == 4 and variant.HasField("dynamic_batching")
    # Without dynamic batching nothing needs a batch dimension: only the instances change.
    unbatched = parse_model_config(preset_variant(NO_BATCH, BatchingPreset(dynamic_batching=False, instance_count=3),
                                                  "detector"), "variant")
    assert unbatched.max_batch_size == 0 and not unbatched.HasField("dynamic_batching")
    assert [(g.count, g.kind) for g in unbatched.instance_group] == [(3, KIND_GPU)]


def test_without_dynamic_batching_the_models_batcher_goes_and_a_sequence_batcher_stays():
    no_batcher = BatchingPreset(dynamic_batching=False, instance_count=2)
    assert not parse_model_config(preset_variant(ONNX, no_batcher, "resnet50"), "v").HasField("dynamic_batching")
    sequence = parse_model_config(preset_variant(SEQUENCE, no_batcher, "streaming_asr"), "v")
    assert sequence.sequence_batching.max_sequence_idle_microseconds == 5_000_000
    assert sequence.model_transaction_policy.decoupled is True
    assert sequence.WhichOneof("scheduling_choice") == "sequence_batching"


@pytest.mark.parametrize("base, preset, refusal", [
    (NO_BATCH, BUILTIN_PRESETS["latency"], r"the model does not batch \(max_batch_size 0\) and the preset sets no maxBatchSize"),
    (ENSEMBLE, BUILTIN_PRESETS["throughput"], r"an ensemble has no instance groups and no dynamic batching"),
    (ENSEMBLE, BatchingPreset(dynamic_batching=False), r"an ensemble has no instance groups"),
    (SEQUENCE, BUILTIN_PRESETS["latency"], r"the model uses sequence_batching, and Triton's dynamic and sequence batching "
                                           r"exclude each other \(scheduling_choice\)"),
    (ONNX, BatchingPreset(preferred_batch_sizes=[16, 48, 64]), r"preferredBatchSizes \[48, 64\] exceed the max_batch_size 32"),
    (TENSORRT, BatchingPreset(instance_kind="cpu"), r"a TensorRT engine runs on GPUs only"),
], ids=["max-batch-size-0", "ensemble", "ensemble-without-batching", "sequence-batching", "preferred-over-max", "tensorrt-on-cpu"])
def test_what_triton_could_not_run_is_refused_on_one_line(base, preset, refusal):
    where = "m/config.pbtxt with preset 'p'"
    with pytest.raises(PresetError, match=rf"^m/config\.pbtxt with preset 'p': {refusal}") as info:
        preset_variant(base, preset, where)
    assert "\n" not in str(info.value)


def test_stack_presets_add_to_the_builtin_ones_and_replace_one_by_name():
    fast = BatchingPreset(instance_count=4)
    merged = all_presets({"latency": fast, "batch-heavy": BatchingPreset(max_batch_size=256)})
    assert sorted(merged) == ["batch-heavy", "latency", "throughput"]
    assert merged["latency"] is fast and merged["throughput"] is BUILTIN_PRESETS["throughput"]
    assert all_presets({}) == BUILTIN_PRESETS


# --------------------------------------------------------------------------- a model repository


def repository(root: Path, configs: dict[str, str]) -> Path:
    for model, text in configs.items():
        (root / model / "1").mkdir(parents=True)
        (root / model / "config.pbtxt").write_text(text)
        (root / model / "1" / "model.bin").write_bytes(b"weights")
    return root


def source_holding_variant(root: Path, preset: str) -> Path:
    """A repository whose resnet50 already holds the variant file of `preset`."""
    repository(root, {"resnet50": ONNX})
    (root / "resnet50" / "configs").mkdir()
    (root / "resnet50" / "configs" / f"{preset}.pbtxt").write_text(ONNX)
    return root


def test_upload_variants_covers_every_model_directory_and_preset(tmp_path):
    root = repository(tmp_path, {"resnet50": ONNX, "bert_trt": TENSORRT})
    (root / "README.md").write_text("not a model")
    (root / "labels").mkdir()  # a directory without config.pbtxt is no model
    (root / "resnet50" / "1" / "config.pbtxt").write_text("a file of a version, not the model's config")
    variants = upload_variants(str(root), BUILTIN_PRESETS)
    assert sorted(variants) == ["bert_trt/configs/latency.pbtxt", "bert_trt/configs/throughput.pbtxt",
                                "resnet50/configs/latency.pbtxt", "resnet50/configs/throughput.pbtxt"]
    for key, text in variants.items():
        model, _, preset = key.removesuffix(".pbtxt").split("/")
        assert parse_model_config(text, key).name == model
        assert text == preset_variant((root / model / "config.pbtxt").read_text(), BUILTIN_PRESETS[preset], key)
    assert upload_variants(str(root), {}) == {}


def test_upload_variants_refuses_to_overwrite_a_variant_the_source_holds(tmp_path):
    root = source_holding_variant(tmp_path, "latency")
    with pytest.raises(PresetError, match=r"^resnet50/configs/latency\.pbtxt: the source already holds this file, which "
                                          r"preset 'latency' would overwrite"):
        upload_variants(str(root), BUILTIN_PRESETS)
    assert list(upload_variants(str(root), {"throughput": BUILTIN_PRESETS["throughput"]})) == [
        "resnet50/configs/throughput.pbtxt"]


def test_upload_variants_refuses_a_config_naming_another_model(tmp_path):
    root = repository(tmp_path, {"resnet": ONNX})
    with pytest.raises(PresetError, match=r"^resnet/config\.pbtxt: names model 'resnet50', not its directory 'resnet'"):
        upload_variants(str(root), BUILTIN_PRESETS)


# --------------------------------------------------------------------------- the plan


SECRETS = ("s3AccessKeyId", "s3SecretAccessKey")


def stack_with_upload(source: Path, presets: list[str], tuning_presets: dict | None = None) -> dict:
    raw = base_config() | {
        "weightCaches": {"fileShare": base_config()["weightCaches"]["fileShare"], "s3": {
            "endpoint": "http://minio.local:9000", "bucket": "weights",
            "uploads": [{"source": str(source), "prefix": "svc/v1", "presets": presets}],
        }},
        "s3AccessKeyId": "id", "s3SecretAccessKey": "key",
    }
    if tuning_presets is not None:
        raw["tuningPresets"] = tuning_presets
    return raw


def test_an_upload_with_presets_carries_a_variant_per_model_and_preset(tmp_path):
    root = repository(tmp_path, {"resnet50": ONNX, "bert_trt": TENSORRT})
    plan = render_raw(stack_with_upload(root, ["latency", "small"], {"small": {"maxBatchSize": 4, "instanceCount": 3}}),
                      secret_keys=SECRETS)
    (upload,) = plan.of_type(UPLOAD)
    generated = upload.inputs["generated"]
    assert sorted(generated) == ["bert_trt/configs/latency.pbtxt", "bert_trt/configs/small.pbtxt",
                                 "resnet50/configs/latency.pbtxt", "resnet50/configs/small.pbtxt"]
    small = parse_model_config(generated["resnet50/configs/small.pbtxt"], "small")
    assert small.max_batch_size == 4 and small.instance_group[0].count == 3
    # An upload without presets declares no generated files.
    (plain,) = render_raw(stack_with_upload(root, []), secret_keys=SECRETS).of_type(UPLOAD)
    assert "generated" not in plain.inputs


def test_changing_a_preset_updates_the_upload_in_place(tmp_path):
    root = repository(tmp_path, {"resnet50": ONNX})
    before = render_raw(stack_with_upload(root, ["fast"], {"fast": {"maxQueueDelayMicroseconds": 100}}), secret_keys=SECRETS)
    after = render_raw(stack_with_upload(root, ["fast"], {"fast": {"maxQueueDelayMicroseconds": 900}}), secret_keys=SECRETS)
    d = diff_plans(before.to_json(), after.to_json())
    assert d["added"] == d["removed"] == d["errors"] == []
    (change,) = d["changes"]
    assert (change.type, change.action) == (UPLOAD, "update")
    assert change.paths == ["inputs.generated.resnet50/configs/fast.pbtxt"]


@pytest.mark.parametrize("models, presets, tuning, path, message", [
    ({"resnet50": ONNX}, ["latency", "turbo"], None, "presets[1]",
     r"no tuning preset named 'turbo'; presets: latency, throughput"),
    ({"resnet50": ONNX, "pipeline": ENSEMBLE}, ["latency"], None, "presets[0]",
     r"pipeline/config\.pbtxt with preset 'latency': an ensemble has no instance groups"),
    ({"detector": NO_BATCH}, ["throughput", "fixed"], {"fixed": {"maxBatchSize": 2}}, "presets[0]",
     r"detector/config\.pbtxt with preset 'throughput': the model does not batch \(max_batch_size 0\)"),
], ids=["unknown", "ensemble", "max-batch-size-0"])
def test_a_preset_that_cannot_apply_fails_the_plan_at_its_key_path(tmp_path, models, presets, tuning, path, message):
    root = repository(tmp_path, models)
    with pytest.raises(ConfigError) as info:
        render_raw(stack_with_upload(root, presets, tuning), secret_keys=SECRETS)
    text = str(info.value)
    assert "\n" not in text
    assert info.value.paths == [f"inference-platform:weightCaches.s3.uploads[0].{path}"]
    assert re.search(rf"inference-platform:weightCaches\.s3\.uploads\[0\]\.{re.escape(path)}: {message}", text), text


def test_a_source_holding_a_variant_fails_the_plan_naming_the_file(tmp_path):
    root = source_holding_variant(tmp_path, "throughput")
    with pytest.raises(ConfigError, match=r"uploads\[0\]\.presets\[1\]: resnet50/configs/throughput\.pbtxt: the source "
                                          r"already holds this file"):
        render_raw(stack_with_upload(root, ["latency", "throughput"]), secret_keys=SECRETS)

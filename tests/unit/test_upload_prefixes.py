"""Weight uploads each own their prefix: prefixes that are equal or nest are refused before any resource exists."""

from __future__ import annotations

import pytest

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from tests.conftest import base_config


def _with_uploads(prefixes: list[str]) -> dict:
    raw = base_config()
    raw["s3AccessKeyId"], raw["s3SecretAccessKey"] = "k", "s"
    raw["weightCaches"] = {**raw["weightCaches"], "s3": {"endpoint": "https://s3.example.cloud", "bucket": "weights",
                                  "uploads": [{"source": "tests/data", "prefix": p} for p in prefixes]}}
    return raw


@pytest.mark.parametrize(("prefixes", "words"), [
    (["models", "models/llm"], "'models/llm' nests with weightCaches.s3.uploads[0].prefix 'models'"),
    (["models/llm/v1", "models"], "'models' nests with weightCaches.s3.uploads[0].prefix 'models/llm/v1'"),
    (["models", "models"], "'models' is weightCaches.s3.uploads[0].prefix 'models'"),
])
def test_upload_prefixes_that_nest_are_refused_naming_both_keys(prefixes, words):
    with pytest.raises(ConfigError) as err:
        parse_settings(_with_uploads(prefixes), "stacks/Pulumi.t.yaml", frozenset({"s3AccessKeyId", "s3SecretAccessKey"}))
    assert err.value.paths == ["inference-platform:weightCaches.s3.uploads[1].prefix"]
    message = str(err.value)
    assert words in message and "none is inside another" in message and "\n" not in message.strip()


def test_sibling_prefixes_and_a_shared_name_start_are_accepted():
    settings = parse_settings(_with_uploads(["models/a", "models/ab", "models-b"]), "stacks/Pulumi.t.yaml",
                              frozenset({"s3AccessKeyId", "s3SecretAccessKey"}))
    assert [u.prefix for u in settings.weight_caches.s3.uploads] == ["models/a", "models/ab", "models-b"]

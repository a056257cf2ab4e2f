"""What a held-out corpus of hostile stack files found: each is now refused with one line naming
the file and the key path (or file:line:col), or read as Pulumi reads it."""

from __future__ import annotations

import contextlib
import io

import pytest
import yaml

from inference_platform.core import grammar
from platformctl.__main__ import main
from platformctl.engine import stack_settings
from platformctl.stackfile import StackFileError, parse_stack_text
from tests.support.hostile_corpus import LOCATION, hostile_cases, valid_cases

SELECTED = ("image-latest", "sdk-image", "alert-secret-plain", "merge-key", "ui-host-graph", "graph-image", "named-resnet",
            "controller-name")
CASES = [c for c in hostile_cases() if any(s in c[0] for s in SELECTED)]


def plan_refusal(tmp_path, data: bytes) -> tuple[str, str]:
    """(stack file, the one line of `plan --stack-file`), which must exit 2 and write nothing."""
    stack_file = tmp_path / "Pulumi.case.yaml"
    stack_file.write_bytes(data)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["plan", "case", "--stack-file", str(stack_file), "--out", str(tmp_path / "out")])
    lines = err.getvalue().splitlines()
    assert code == 2 and len(lines) == 1, err.getvalue()
    assert not (tmp_path / "out").exists()
    return str(stack_file), lines[0]


def test_the_findings_are_in_the_hostile_corpus():
    assert len(CASES) >= 12
    assert any(c[0] == "merge-keys" for c in valid_cases())


@pytest.mark.parametrize("case_id,data,expected", CASES, ids=[c[0] for c in CASES])
def test_each_finding_is_refused_with_one_line_naming_its_key(tmp_path, case_id, data, expected):
    stack_file, line = plan_refusal(tmp_path, data)
    if expected is LOCATION:
        assert line.startswith(stack_file + ":") and line.split(":")[1].isdigit(), line
    else:
        assert line.startswith(stack_file + ": ") and f"{expected}: " in line, line


@pytest.mark.parametrize("text,line_col", [
    (b"config:\n  inference-platform:customer: d\xffmo\n", "2:33"),
    (b"\xef\xbb\xbfconfig:\r\n  inference-platform:customer: d\xc3\xa9\xffmo\r\n", "2:34"),
    (b"\xfe", "1:1"),
])
def test_a_byte_that_is_not_utf8_is_shown_at_its_line_and_column(text, line_col):
    with pytest.raises(StackFileError) as caught:
        parse_stack_text(text, "Pulumi.x.yaml")
    assert caught.value.one_line().startswith(f"Pulumi.x.yaml:{line_col}: byte 0x"), caught.value.one_line()
    assert "is not UTF-8" in caught.value.one_line()


MERGES = """\
config:
  base: &base {a: 1, b: 1, c: 1}
  other: &other {b: 2, d: 2}
  single:
    <<: *base
    c: 3
  listed:
    <<: [*other, *base]
    e: 5
  inline:
    <<: {a: 9}
  quoted:
    "<<": {a: 9}
"""


def test_merge_keys_expand_as_pulumis_yaml_reader_expands_them():
    config = parse_stack_text(MERGES.encode(), "Pulumi.x.yaml")["config"]
    # Keys after `<<` override it; in a list the earlier mapping wins (yaml.v3 merges it last).
    assert config["single"] == {"a": 1, "b": 1, "c": 3}
    assert config["listed"] == {"a": 1, "b": 2, "c": 1, "d": 2, "e": 5}
    # Only a plain `<<` merges: a quoted one is an ordinary key.
    assert config["inline"] == {"a": 9} and config["quoted"] == {"<<": {"a": 9}}


def test_a_key_that_a_later_merge_would_override_is_refused_as_ambiguous():
    text = "config:\n  base: &b {a: 1}\n  x:\n    a: 2\n    <<: *b\n"
    with pytest.raises(StackFileError) as caught:
        parse_stack_text(text.encode(), "Pulumi.x.yaml")
    line = caught.value.one_line()
    assert line.startswith("Pulumi.x.yaml:5:5: key 'a' (line 4) comes before the merge key"), line


def test_a_stack_written_with_merge_keys_reads_as_the_same_stack_written_out(tmp_path):
    merged = dict(valid_cases())["merge-keys"]
    (tmp_path / "Pulumi.merged-dev.yaml").write_bytes(merged)
    plain = yaml.safe_load(merged)  # PyYAML expands merge keys the same way for this file
    (tmp_path / "Pulumi.plain-dev.yaml").write_text(yaml.safe_dump(plain, sort_keys=False))
    assert b"<<:" in merged
    assert stack_settings(tmp_path / "Pulumi.merged-dev.yaml") == stack_settings(tmp_path / "Pulumi.plain-dev.yaml")


@pytest.mark.parametrize("image", ["nvcr.io/nvidia/tritonserver:latest", "registry.local:5000/triton:latest",
                                   "nvcr.io/nvidia/tritonserver"])
def test_moving_images_are_refused_with_the_reason(image):
    with pytest.raises(ValueError) as caught:
        grammar.image_reference(image)
    assert "is not a pinned image" in str(caught.value) and ":latest moves" in str(caught.value)


def test_latest_pinned_by_digest_is_an_image_that_does_not_move():
    image = "nvcr.io/nvidia/tritonserver:latest@sha256:" + "a" * 64
    assert grammar.image_reference(image) == image

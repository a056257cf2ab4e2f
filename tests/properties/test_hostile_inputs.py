"""Hostile stack files: one complete error line per problem, each naming the file and a key path
(or file:line:col), exit 2, no traceback, nothing written; unusual but valid files plan."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.support.hostile_corpus import LOCATION, hostile_cases, valid_cases

HOSTILE = hostile_cases()
VALID = valid_cases()


def _run_corpus(tmp_path, cases, out_dir) -> dict:
    specs = []
    for i, (case_id, data, *_) in enumerate(cases):
        stack_file = tmp_path / f"Pulumi.case{i}.yaml"
        stack_file.write_bytes(data)
        specs.append({"id": case_id, "argv": ["plan", "corpus", "--stack-file", str(stack_file),
                                              "--out", str(out_dir(i))]})
    (tmp_path / "cases.json").write_text(json.dumps(specs))
    subprocess.run([sys.executable, "-m", "tests.support.corpus_runner", str(tmp_path / "cases.json"),
                    str(tmp_path / "results.json")], cwd=ROOT, check=True, timeout=600)
    return json.loads((tmp_path / "results.json").read_text())


@pytest.fixture(scope="module")
def hostile_results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    return tmp, _run_corpus(tmp, HOSTILE, lambda i: tmp / "out" / str(i))


def test_corpus_is_large_and_spans_the_schema():
    assert len(HOSTILE) >= 250
    paths = {expected for _, _, expected in HOSTILE if expected is not LOCATION}
    # every top-level key of both example stacks, and nesting down to version resources
    assert any(p.count(".") >= 3 and "[" in p for p in paths)
    assert len(VALID) >= 15


@pytest.mark.parametrize("case_id,expected", [(c[0], c[2]) for c in HOSTILE], ids=[c[0] for c in HOSTILE])
def test_hostile_file_gives_complete_error_lines_and_exit_2(hostile_results, case_id, expected):
    tmp, results = hostile_results
    index = next(i for i, c in enumerate(HOSTILE) if c[0] == case_id)
    result = results[case_id]
    assert result["exception"] is None, result["exception"]
    assert result["code"] == 2, result
    lines = result["stderr"].splitlines()
    assert lines, result
    assert "Traceback" not in result["stderr"]
    stack_file = f"Pulumi.case{index}.yaml"
    for line in lines:
        assert re.search(rf"{re.escape(stack_file)}(:\d+:\d+)?: ", line), line
    if expected is not LOCATION:
        assert any(expected in line for line in lines), lines
    assert not (tmp / "out" / str(index)).exists()


def test_unusual_valid_files_plan(tmp_path):
    results = _run_corpus(tmp_path, VALID, lambda i: tmp_path / "out" / str(i))
    for i, (case_id, _) in enumerate(VALID):
        result = results[case_id]
        assert result["exception"] is None, (case_id, result["exception"])
        assert result["code"] == 0, (case_id, result["stderr"])
        assert (tmp_path / "out" / str(i) / "resources.json").exists(), case_id

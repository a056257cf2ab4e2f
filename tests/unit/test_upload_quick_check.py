"""Which source files an upload reads: those whose size or times differ from the manifest, and no other."""

from __future__ import annotations

import hashlib

from inference_platform.weights.s3 import upload as s3upload
from inference_platform.weights.s3.manifest import Manifest
from inference_platform.weights.s3.tree import local_files, stat_fields


def test_only_files_whose_size_or_times_changed_are_handed_to_the_hashing_workers(tmp_path, monkeypatch):
    for name in ("a.bin", "b.bin", "c.bin"):
        (tmp_path / name).write_bytes(name.encode())
    files = local_files(str(tmp_path))
    old = Manifest({f.rel: {"sha256": "recorded", **stat_fields(f.stat)} for f in files if f.rel != "b.bin"}, found=True)
    handed: list[str] = []
    parallel_map = s3upload.parallel_map
    monkeypatch.setattr(s3upload, "parallel_map", lambda fn, items, workers: parallel_map(
        fn, handed.extend(f.rel for f in items) or items, workers))
    entries = s3upload._hash_source(files, old, workers=4)
    assert handed == ["b.bin"]
    assert {rel: e["sha256"] for rel, e in entries.items()} == {
        "a.bin": "recorded", "b.bin": hashlib.sha256(b"b.bin").hexdigest(), "c.bin": "recorded"}

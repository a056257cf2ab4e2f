"""Upload benchmark: a synthetic model repository synced to a local S3-compatible server.

Builds ~1 GiB (many small files, a few large ones) in a temporary directory, starts
moto's server on loopback, and times the first upload and an unchanged re-run
through the same code the upload provider runs (`sync_tree`).

    python -m platformctl.bench_upload [--mib 1024]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

SMALL_FILES = 2000
SMALL_BYTES = 64 * 1024
LARGE_FILES = 4
CHUNK = 8 * 1024 * 1024


def _write(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, CHUNK)
            f.write(os.urandom(n))
            left -= n


def synthetic_repository(root: Path, total_mib: int) -> tuple[int, int]:
    """Models with config files, vocabularies and shards; returns (files, bytes)."""
    small_total = SMALL_FILES * SMALL_BYTES
    large_each = max((total_mib * 1024 * 1024 - small_total) // LARGE_FILES, 1)
    for i in range(SMALL_FILES):
        model = f"model-{i % 20:02d}"
        _write(root / model / "1" / f"part-{i:05d}.bin", SMALL_BYTES)
    for m in range(20):
        (root / f"model-{m:02d}" / "config.pbtxt").write_text(f'name: "model-{m:02d}"\nbackend: "onnxruntime"\n')
    for i in range(LARGE_FILES):
        _write(root / "llm" / "1" / f"shard-{i}.safetensors", large_each)
    files = [p for p in root.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def run(total_mib: int) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from components.s3bucket import BucketProvider, client, sync_tree
    from tests.s3server import running_server

    with tempfile.TemporaryDirectory(prefix="weights-bench-") as tmp, running_server(auth=False) as server:
        files, size = synthetic_repository(Path(tmp), total_mib)
        BucketProvider().create(server.props(bucket="bench-weights", versioning=True, noncurrentDays=7, forceDestroy=True))
        props = server.props(bucket="bench-weights", source=tmp, prefix="repo")
        start = time.perf_counter()
        first = sync_tree(client(props), props)
        first_s = time.perf_counter() - start
        start = time.perf_counter()
        again = sync_tree(client(props), props)
        again_s = time.perf_counter() - start
    return {"files": files, "bytes": size, "first_s": first_s, "again_s": again_s,
            "uploaded_first": first["uploadedFiles"], "uploaded_again": again["uploadedFiles"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="platformctl.bench_upload")
    parser.add_argument("--mib", type=int, default=1024, help="size of the synthetic repository, MiB")
    args = parser.parse_args(argv)
    r = run(args.mib)
    mb = r["bytes"] / 1e6
    ratio = r["again_s"] / r["first_s"]
    print(f"upload: {r['files']} files, {mb:.0f} MB to a local S3 server (moto)")
    print(f"  first run   {r['first_s']:7.2f} s  {mb / r['first_s']:7.1f} MB/s  ({r['uploaded_first']} files sent)")
    print(f"  unchanged   {r['again_s']:7.2f} s  {100 * ratio:6.1f}% of the first  ({r['uploaded_again']} files sent; target < 5%)")
    return 0 if r["uploaded_again"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

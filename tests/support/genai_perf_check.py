"""Parse GenAI-Perf command lines with GenAI-Perf's own parser, as `genai-perf` does before it
profiles anything (genai_perf/parser.py parse_args: argparse with every option's type and
choices, then refine_args: the checks across options, artifact paths, the model's name).

Runs in .venv-genai-perf (make genai-perf). Reads JSON from stdin:
{"workdir": <the pod's work directory>, "commands": {<case>: [argv...]}}; writes JSON:
{"results": {<case>: {"ok": true, "args": {...}, "export": <relative path>, "exported": {...}} | {"ok": false, "error": <text>}}}.
Paths under `workdir` are moved to a temporary directory first. For a command that parses, the
run's statistics are exported as `genai-perf profile` exports them (OutputReporter, the same
exporters), from made-up request timings (`timings`), so the test reads GenAI-Perf's real output.
"""

import contextlib
import io
import json
import sys
import tempfile
from enum import Enum
from pathlib import Path

from genai_perf import parser
from genai_perf.export_data.output_reporter import OutputReporter
from genai_perf.metrics import LLMMetrics, Statistics

MS = 1_000_000  # GenAI-Perf's timings are nanoseconds until OutputReporter scales them to ms


def timings() -> Statistics:
    """Ten requests: TTFT 100..190 ms, ITL 10..19 ms."""
    n = 10
    return Statistics(LLMMetrics(
        request_throughputs=[4.0], request_latencies=[(500 + 10 * i) * MS for i in range(n)],
        time_to_first_tokens=[(100 + 10 * i) * MS for i in range(n)],
        time_to_second_tokens=[(110 + 10 * i) * MS for i in range(n)],
        inter_token_latencies=[(10 + i) * MS for i in range(n)],
        output_token_throughputs=[1000.0], output_token_throughputs_per_request=[50.0] * n,
        output_sequence_lengths=[128] * n, input_sequence_lengths=[1024] * n,
    ))


def check(argv: list[str], workdir: str, tmp: Path) -> dict:
    sys.argv = [a.replace(f"{workdir}/", f"{tmp}/") for a in argv]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            args, passthrough = parser.parse_args()
    except SystemExit:
        return {"ok": False, "error": err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else "exit"}
    except Exception as e:  # refine_args raises ValueError / ArgumentTypeError for some checks
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}
    with contextlib.redirect_stdout(io.StringIO()):
        Path(args.artifact_dir).mkdir(parents=True, exist_ok=True)
        OutputReporter(timings(), None, args).report_output()
    exports = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*_genai_perf.json"))
    parsed = {k: (v.name.lower() if isinstance(v, Enum) else v) for k, v in vars(args).items() if k != "func"}
    parsed = json.loads(json.dumps(parsed, default=str).replace(f"{tmp}/", f"{workdir}/"))
    return {"ok": True, "args": parsed, "passthrough": passthrough, "exports": exports,
            "exported": json.loads((tmp / exports[0]).read_text()) if len(exports) == 1 else None}


def main() -> None:
    request = json.load(sys.stdin)
    results = {}
    for case, argv in request["commands"].items():
        with tempfile.TemporaryDirectory() as tmp:
            results[case] = check(argv, request["workdir"], Path(tmp))
    json.dump({"results": results}, sys.stdout)


if __name__ == "__main__":
    main()

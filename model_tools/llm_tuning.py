"""Sweep an LLM version's concurrency with GenAI-Perf and publish what it found.

`sweep --config <genai-perf.json> --results <dir>`: runs each of the config's `genai-perf
profile` command lines in order (lowest concurrency first), reads the statistics GenAI-Perf
exports (`<artifact dir>/profile_export_genai_perf.json`: per metric `avg`, `p25`..`p99`, `min`,
`max`, in ms for latencies), and judges each against the objectives at the config's statistic.
It stops at the first concurrency that misses one (latency only grows with load) and writes
`<results>/summary.json`: every measurement and the highest concurrency that met them all.
A GenAI-Perf failure stops the run (exit 4).

`publish --results <dir> --tag tuned-<id> --dest <model dir>`: copies the results to
`<dest>/tuning/<tag>/`; when no concurrency met the objectives it writes nothing (exit 3).

Standard library only: this file ships to the pod in a ConfigMap and runs in the Triton SDK image.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

SUMMARY = "summary.json"


class TuningError(Exception):
    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def measurement(stats: dict, concurrency: int, statistic: str, objectives_ms: dict[str, float], where: str) -> dict:
    """One concurrency's figures at `statistic` and whether each objective held."""
    measured: dict[str, float] = {}
    for metric in objectives_ms:
        value = stats.get(metric, {}).get(statistic)
        if not isinstance(value, (int, float)):
            raise TuningError(f"{where}: no {statistic} of {metric} (GenAI-Perf measured none: streaming off, "
                              "or every request failed)", 4)
        measured[metric] = float(value)
    throughput = stats.get("output_token_throughput", {}).get("avg")
    return {
        "concurrency": concurrency,
        "measuredMs": measured,
        "outputTokensPerSecond": throughput,
        "requestsPerSecond": stats.get("request_throughput", {}).get("avg"),
        "meetsObjectives": all(measured[m] <= limit for m, limit in objectives_ms.items()),
    }


def summarise(measurements: list[dict], statistic: str, objectives_ms: dict[str, float]) -> dict:
    met = [m["concurrency"] for m in measurements if m["meetsObjectives"]]
    return {"statistic": statistic, "objectivesMs": objectives_ms, "measurements": measurements,
            "bestConcurrency": max(met) if met else None}


def sweep(config: dict, results: Path, run=subprocess.run) -> dict:
    statistic, objectives = config["statistic"], config["objectivesMs"]
    measurements: list[dict] = []
    for step in config["runs"]:
        concurrency = step["concurrency"]
        print(f"sweep: concurrency {concurrency}: {' '.join(step['command'])}", flush=True)
        if run(step["command"]).returncode != 0:
            raise TuningError(f"genai-perf failed at concurrency {concurrency}; see its output above", 4)
        export = Path(step["export"])
        try:
            stats = json.loads(export.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise TuningError(f"{export}: cannot read GenAI-Perf's statistics: {err}", 4) from None
        m = measurement(stats, concurrency, statistic, objectives, str(export))
        measurements.append(m)
        print(f"sweep: concurrency {concurrency}: {statistic} {m['measuredMs']} ms, "
              f"{'meets' if m['meetsObjectives'] else 'misses'} {objectives} ms", flush=True)
        if not m["meetsObjectives"]:
            break
    summary = summarise(measurements, statistic, objectives)
    results.mkdir(parents=True, exist_ok=True)
    (results / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def publish(results: Path, tag: str, dest: Path) -> int:
    """Copy the results under `dest/tuning/tag`; the best concurrency."""
    try:
        summary = json.loads((results / SUMMARY).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise TuningError(f"{results / SUMMARY}: cannot read the sweep's summary: {err}", 4) from None
    best = summary.get("bestConcurrency")
    if best is None:
        raise TuningError(f"no concurrency met the objectives {summary.get('objectivesMs')} ms at "
                          f"{summary.get('statistic')}; see {results / SUMMARY}", 3)
    shutil.copytree(results, dest / "tuning" / tag, dirs_exist_ok=True)
    return best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="step", required=True)
    s = sub.add_parser("sweep")
    s.add_argument("--config", type=Path, required=True)
    s.add_argument("--results", type=Path, required=True)
    u = sub.add_parser("publish")
    u.add_argument("--results", type=Path, required=True)
    u.add_argument("--tag", required=True, help="this run's name (tuned-<id>)")
    u.add_argument("--dest", type=Path, required=True, help="the model's directory to publish into")
    a = p.parse_args(argv)
    try:
        if a.step == "sweep":
            summary = sweep(json.loads(a.config.read_text(encoding="utf-8")), a.results)
            print(f"sweep: best concurrency {summary['bestConcurrency']}")
        else:
            best = publish(a.results, a.tag, a.dest)
            print(f"published {a.dest / 'tuning' / a.tag}: {best} requests in flight per replica meet the objectives "
                  f"(llm.autoscaling.requestsInFlightTarget at most {best})")
    except TuningError as err:
        print(f"{a.step}: {err}", file=sys.stderr)
        return err.code
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Peak memory and wall time of the crawler against hostile servers (the hostile test suite).

    python -m bench.bench_hostile            # whole suite once, a baseline, then each case alone
    python -m bench.bench_hostile --suite    # whole suite and baseline only

Each run is a fresh pytest process measured by `bench.measure` (GNU time's max RSS). The
servers live in the same process as the crawler, so every figure is an upper bound on
the crawler's own memory; the baseline (one trivial test with the same imports) is the
floor an empty crawl costs, and "over baseline" is what the hostile input added.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from bench.measure import Measured, run_measured

ROOT = Path(__file__).resolve().parent.parent
SUITE = ["tests/test_hostile.py", "tests/test_robots.py", "tests/test_politeness.py"]
BASELINE = "tests/test_politeness.py::test_retry_after_seconds_and_dates"


def pytest_run(targets: list[str], workdir: Path, name: str) -> tuple[Measured, dict[str, float]]:
    junit = workdir / f"{name}.xml"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        *targets,
    ]
    measured = run_measured(
        command, timeout=600, stdout=workdir / f"{name}.out", stderr=workdir / f"{name}.err", cwd=ROOT
    )
    times: dict[str, float] = {}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            times[f"{case.get('classname')}::{case.get('name')}"] = float(case.get("time", 0))
    if measured.returncode != 0:
        print(f"warning: {name} exited {measured.returncode} (see {workdir / (name + '.out')})")
    return measured, times


def cases_of(path: str) -> list[str]:
    import ast

    tree = ast.parse((ROOT / path).read_text())
    return [
        f"{path}::{node.name}"
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
    ]


def mib(kb: int) -> float:
    return round(kb / 1024, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--suite", action="store_true", help="only the whole-suite and baseline runs")
    parser.add_argument("--output", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
        workdir = Path(tmp)
        base, _ = pytest_run([BASELINE], workdir, "baseline")
        suite, times = pytest_run(SUITE, workdir, "suite")
        slowest = max(times.items(), key=lambda kv: kv[1]) if times else ("", 0.0)
        result: dict[str, object] = {
            "suite": SUITE,
            "cases": len(times),
            "suite_wall_seconds": round(suite.wall_seconds, 2),
            "suite_peak_rss_mib": mib(suite.maxrss_kb),
            "baseline_peak_rss_mib": mib(base.maxrss_kb),
            "over_baseline_mib": mib(suite.maxrss_kb - base.maxrss_kb),
            "slowest_case": slowest[0],
            "slowest_case_seconds": round(slowest[1], 2),
        }
        print(f"hostile suite: {len(times)} cases in {suite.wall_seconds:.1f} s wall")
        print(f"peak RSS {mib(suite.maxrss_kb)} MiB (baseline {mib(base.maxrss_kb)} MiB)")
        print(f"slowest case: {slowest[0]} {slowest[1]:.2f} s")
        if not args.suite:
            each = []
            for target in cases_of("tests/test_hostile.py"):
                name = target.rsplit("::", 1)[1]
                measured, case_times = pytest_run([target], workdir, name)
                seconds = next(iter(case_times.values()), 0.0)
                each.append(
                    {
                        "case": name,
                        "seconds": round(seconds, 2),
                        "peak_rss_mib": mib(measured.maxrss_kb),
                        "over_baseline_mib": mib(measured.maxrss_kb - base.maxrss_kb),
                    }
                )
            each.sort(key=lambda row: -float(row["peak_rss_mib"]))  # type: ignore[arg-type]
            result["each_case"] = each
            print("\n| case (test_hostile.py) | seconds | peak RSS MiB | over baseline |")
            print("|---|---:|---:|---:|")
            for row in each:
                cells = (row["case"], row["seconds"], row["peak_rss_mib"], row["over_baseline_mib"])
                print("| " + " | ".join(str(cell) for cell in cells) + " |")
        if args.output:
            args.output.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""The bench's measuring wrapper: CPU and peak RSS of each process of a command's tree, by name."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench.measure import run_measured

BURN = """
import json, os, sys, time

def burn(label: str, seconds: float) -> None:
    started = time.process_time()
    while time.process_time() - started < seconds:
        pass
    spent = os.times()
    with open(f"{label}.json", "w") as out:
        json.dump(spent.user + spent.system, out)
    time.sleep(0.5)  # long enough for the sampler to see the final figure
"""

PARENT = """
import multiprocessing, subprocess, sys
from burn import burn

if __name__ == "__main__":
    worker = multiprocessing.get_context("spawn").Process(target=burn, args=("worker", 0.3))
    worker.start()
    child = subprocess.Popen([sys.executable, "-m", "child"])
    burn("parent", 0.2)
    worker.join()
    child.wait()
"""

CHILD = """
from burn import burn
burn("child", 0.4)
"""


def test_cpu_of_each_process_by_name(tmp_path: Path) -> None:
    for name, code in (("burn", BURN), ("parent", PARENT), ("child", CHILD)):
        (tmp_path / f"{name}.py").write_text(code)
    measured = run_measured(
        [sys.executable, "-m", "parent"],
        timeout=60,
        stdout=tmp_path / "out",
        stderr=tmp_path / "err",
        cwd=tmp_path,
    )
    assert measured.returncode == 0, (tmp_path / "err").read_text()
    cpu = measured.process_cpu_seconds
    names = {"parent": "parent", "parent worker": "worker", "child": "child"}
    assert set(names) <= set(cpu)
    for name, label in names.items():
        reported = json.loads((tmp_path / f"{label}.json").read_text())
        assert abs(cpu[name] - reported) <= 0.03, (name, cpu[name], reported)
    assert "time" not in cpu and "time" not in measured.process_peaks_kb
    assert set(names) <= set(measured.process_peaks_kb)
    assert sum(cpu.values()) <= measured.cpu_seconds + 0.03
    assert measured.unsampled_cpu_seconds < 0.2

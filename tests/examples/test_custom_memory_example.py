"""The custom-memory example runs as a user would run it."""

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_custom_memory_example_runs_and_reports_every_method():
    code = "import custom_memory; print(custom_memory.main(seeds=2, workers=2))"
    out = subprocess.run([sys.executable, "-c", code], cwd=EXAMPLES, capture_output=True, text=True,
                         check=True, timeout=120).stdout
    for method in ("no-memory", "append-only", "lww", "tepa", "custom_memory:ForgetOnFailures"):
        assert method in out

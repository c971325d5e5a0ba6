"""Evaluate your own memory method against TEPA and the baselines.

A memory is any object with ``observe``, ``retrieve`` and ``reset``. This one
remembers the newest *successful* value per key and forgets a key after two
failures in a row: a simple revocation rule to compare with TEPA's. The first
step is the conformance kit, ``check_memory``, which names any broken part of
the protocol before an evaluation runs.

    python examples/custom_memory.py            # or, from this folder:
    tepa-bench run TEPA/RegimeDrift-v0 --methods custom_memory:ForgetOnFailures,tepa,lww --seeds 20
"""

from __future__ import annotations

from tepa_envs.agents.evaluation import evaluate, summarize
from tepa_envs.agents.memories import check_memory
from tepa_envs.agents.evaluation.outputs.report import format_table
from tepa_envs.core import Evidence, LifecycleState, Record


class ForgetOnFailures:
    name = "forget-on-failures"

    def __init__(self, patience: int = 2) -> None:
        self.patience = patience
        self.reset()

    def reset(self) -> None:
        self.values: dict[str, tuple[str, int]] = {}
        self.failures: dict[str, int] = {}

    def observe(self, evidence: Evidence) -> None:
        if evidence.outcome is False:
            self.failures[evidence.key] = self.failures.get(evidence.key, 0) + 1
            if self.failures[evidence.key] >= self.patience:
                self.values.pop(evidence.key, None)
            return
        self.failures[evidence.key] = 0
        self.values[evidence.key] = (evidence.value, evidence.t)

    def retrieve(self, key: str, context: str = "") -> list[Record]:
        if key not in self.values:
            return []
        value, t = self.values[key]
        return [Record(key, value, 1, 0, LifecycleState.ACTIVE, t, t)]


def main(seeds: int = 20, workers: int = 1) -> str:
    check_memory(ForgetOnFailures())  # raises MemoryConformanceError naming the first broken check
    # Methods travel to worker processes by import path; this file's folder is on sys.path when run as a script.
    methods = ["no-memory", "append-only", "lww", "tepa", "custom_memory:ForgetOnFailures"]
    evaluation = evaluate("TEPA/RegimeDrift-v0", methods, range(seeds), workers=workers)
    return format_table(summarize(evaluation))


if __name__ == "__main__":
    print(main())

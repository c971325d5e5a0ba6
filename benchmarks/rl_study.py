"""The RL study (``tepa-bench rl``) and the script that regenerates docs/rl.md.

    python benchmarks/rl_study.py [--quick | --size quick|medium|default] [--workers 2] [--readme]

runs ``tepa-bench rl`` with the same arguments (``--out results/rl``, store
``results/rl/rl_store.db``: a rerun resumes, and a rerun of a finished study only
rewrites the files); ``--readme`` writes the ``rl-study`` block of ``docs/rl.md``
and ``docs/rl_curves.png`` from its output. The ``sb3`` engine is
:mod:`tepa_envs.wrappers.sb3_engine`.
"""

from __future__ import annotations

import sys
from typing import Sequence

from tepa_envs.agents.evaluation.cli.app import main as cli_main


def main(argv: Sequence[str] | None = None) -> int:
    """``tepa-bench rl`` with ``argv`` (default ``--out results/rl``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    return cli_main(["rl", *args])


if __name__ == "__main__":
    raise SystemExit(main())

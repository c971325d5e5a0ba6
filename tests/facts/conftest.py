"""Where the official MemoryAgentBench rows are: ``TEPA_MAB_DATA`` or the project's
shared folder beside the checkout (``../shared/data/memoryagentbench``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REAL_ROWS = Path(os.environ.get("TEPA_MAB_DATA",
                                Path(__file__).resolve().parents[3] / "shared" / "data" / "memoryagentbench"))


@pytest.fixture(scope="session")
def real_rows() -> Path:
    """The folder of the official rows; the test is skipped, saying why, when it is absent."""
    if not (REAL_ROWS / "factconsolidation_sh_6k.json").exists():
        pytest.skip(f"the official MemoryAgentBench rows are not in {REAL_ROWS} (e.g. an sdist); "
                    "set TEPA_MAB_DATA to their folder")
    return REAL_ROWS


@pytest.fixture()
def needs_wordnet() -> None:
    """Skip, saying why, a test whose measured floors assume WordNet (the ``wordnet`` extra)."""
    from tepa_envs.facts.wordnet import INSTALL, wordnet

    if wordnet() is None:
        pytest.skip(f"WordNet is not installed ({INSTALL}, the wordnet extra); the floors assume it")

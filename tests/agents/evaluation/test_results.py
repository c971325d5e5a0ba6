"""Typed results: round trip through results.json, the schema version, and the documented schema."""

import dataclasses
import json
import math
import re
from pathlib import Path

import pytest

from tepa_envs.agents.evaluation.analysis.paper import SETTINGS
from tepa_envs.agents.evaluation.analysis.results import (
    SCHEMA_VERSION, Comparison, MethodSummary, PhaseEstimate, Summary,
)
from tepa_envs.agents.evaluation.analysis.summary import summarize
from tepa_envs.agents.evaluation.engine.evaluate import evaluate
from tepa_envs.agents.evaluation.outputs.report import write_json

SCHEMA_DOC = Path(__file__).resolve().parents[3] / "docs" / "results_schema.md"
METHODS = ["tepa", "no-memory", "append-only"]


@pytest.fixture(scope="module")
def summary() -> Summary:
    evaluation = evaluate("TEPA/RegimeDrift-v0", METHODS, range(3), env_kwargs={"phase_lengths": [5, 5, 5, 5]})
    return summarize(evaluation)


def test_summarize_returns_typed_results(summary):
    assert summary.methods == tuple(METHODS) and summary.seeds == (0, 1, 2)
    assert summary.phases == ("stable", "light_drift", "full_reversal", "partial_return", "overall")
    assert len(summary.phase_of_task) == 20
    for method in METHODS:
        assert isinstance(summary.estimates[method], MethodSummary)
        for phase in summary.phases:
            estimate = summary.estimate(method, phase)
            assert isinstance(estimate, PhaseEstimate) and estimate is summary.estimates[method][phase]
            assert estimate.ci_low <= estimate.mean <= estimate.ci_high and estimate.mpi is not None
    # two baselines, each compared with the two other methods, in every phase
    assert len(summary.comparisons) == 2 * 2 * len(summary.phases)
    assert all(isinstance(c, Comparison) and c.p_value <= c.p_holm for c in summary.comparisons)
    with pytest.raises(dataclasses.FrozenInstanceError):
        summary.env_id = "other"  # type: ignore[misc]


def test_round_trip_through_json_text(summary):
    data = summary.to_json()
    assert data["schema_version"] == SCHEMA_VERSION == 1
    assert next(iter(data)) == "schema_version"
    text = json.dumps(data)
    back = Summary.from_json(json.loads(text))
    assert back == summary
    assert back.to_json() == data
    assert json.dumps(back.to_json()) == text


def test_setting_and_paper_round_trip(summary):
    reproduced = summary.with_setting(SETTINGS["controlled"])
    data = json.loads(json.dumps(reproduced.to_json()))
    assert data["setting"] == "controlled" and data["paper"] == SETTINGS["controlled"].paper
    assert Summary.from_json(data) == reproduced
    assert "setting" not in summary.to_json() and "paper" not in summary.to_json()


def test_write_json_writes_to_json(summary, tmp_path):
    write_json(summary, tmp_path / "results.json")
    assert json.loads((tmp_path / "results.json").read_text()) == summary.to_json()


def test_without_no_memory_there_is_no_mpi_key(summary):
    evaluation = evaluate("TEPA/RegimeDrift-v0", ["tepa", "append-only"], range(2),
                          env_kwargs={"phase_lengths": [5, 5, 5, 5]})
    data = summarize(evaluation).to_json()
    assert all("mpi" not in cell for cells in data["summary"].values() for cell in cells.values())
    assert Summary.from_json(data).estimate("tepa", "overall").mpi is None


def test_undefined_mpi_round_trips_as_nan():
    estimate = PhaseEstimate(0.5, 0.4, 0.6, float("nan"))
    text = json.dumps(estimate.to_json())
    assert "NaN" in text and math.isnan(PhaseEstimate.from_json(json.loads(text)).mpi)


def test_files_without_a_schema_version_are_read_and_newer_ones_refused(summary):
    legacy = summary.to_json()
    del legacy["schema_version"]
    assert Summary.from_json(legacy) == summary
    with pytest.raises(ValueError, match="newer"):
        Summary.from_json({**summary.to_json(), "schema_version": SCHEMA_VERSION + 1})
    incomplete = summary.to_json()
    del incomplete["comparisons"]
    with pytest.raises(ValueError, match="comparisons"):
        Summary.from_json(incomplete)


# ---- the documented schema matches what is written -------------------------------------------

# Objects whose keys are data (method, phase and trial-kind names), not field names.
MAPS = {"summary": "<method>", "summary.<method>": "<phase>",
        "trials_per_episode": "<method>", "trials_per_episode.<method>": "<kind>",
        "per_task_success": "<method>", "paper": "<method>", "paper.<method>": "<phase>",
        "drift_metrics": "<method>", "drift_metrics.<method>.views.phases": "<phase>"}
# Free-form objects passed through as given.
OPAQUE = {"env_kwargs", "reader_kwargs"}


def written_fields(value, prefix=""):
    """Every field path of a results.json dict, with data keys replaced by placeholders."""
    if isinstance(value, dict) and prefix not in OPAQUE:
        for key, item in value.items():
            name = MAPS.get(prefix, key)
            if prefix == "trials_per_episode.<method>" and key == "total":
                name = key
            path = f"{prefix}.{name}" if prefix else name
            yield path
            yield from written_fields(item, path)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                yield from written_fields(item, f"{prefix}[]")


def documented_fields() -> dict[str, str]:
    """Field path -> 'Present' column of the table in docs/results_schema.md."""
    rows = {}
    for line in SCHEMA_DOC.read_text().splitlines():
        match = re.match(r"\|\s*`([^`]+)`\s*\|[^|]*\|([^|]*)\|", line)
        if match:
            assert match.group(1) not in rows, f"{match.group(1)} documented twice"
            rows[match.group(1)] = match.group(2).strip()
    return rows


def test_documented_schema_version_is_the_written_one():
    match = re.search(r"^Current schema version: (\d+)$", SCHEMA_DOC.read_text(), re.MULTILINE)
    assert match and int(match.group(1)) == SCHEMA_VERSION


def test_documented_fields_match_the_written_keys(summary):
    documented = documented_fields()
    plain = set(written_fields(summary.to_json()))
    always = {field for field, present in documented.items() if present == "always"}
    assert always <= plain, f"documented as always written but missing: {sorted(always - plain)}"
    # setting and paper (reproduce) and trial kinds (methods that run trials) are written too
    with_trials = summarize(evaluate("TEPA/PreferenceStream-v0", ["lww-validation"], range(1)))
    written = (plain | set(written_fields(summary.with_setting(SETTINGS["controlled"]).to_json()))
               | set(written_fields(with_trials.to_json())))
    assert written == set(documented), (
        f"undocumented: {sorted(written - set(documented))}; never written: {sorted(set(documented) - written)}")

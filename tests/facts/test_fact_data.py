import hashlib
import json
import subprocess
import sys
from collections import defaultdict

import pytest

from tepa_envs.error import DataFormatError
from tepa_envs.facts.data import (
    LENGTHS,
    N_QUESTIONS,
    RELATIONS,
    generate_records,
    generate_world,
    world_records,
)
from tepa_envs.facts.loader import (
    load_records,
    parse_context,
    parse_fact,
    parse_questions,
    select_record,
    validate_record,
    write_records,
)
from tepa_envs.facts.metric import normalize_answer, substring_exact_match


@pytest.fixture(scope="module")
def world_6k():
    return generate_world("6k", seed=0)


@pytest.fixture(scope="module")
def records_6k(world_6k):
    return world_records(world_6k)


def fact_history(context: str) -> dict[str, list[tuple[int, str]]]:
    history: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for serial, text in parse_context(context):
        parsed = parse_fact(text)
        assert parsed is not None, f"fact {serial} does not parse: {text!r}"
        history[parsed[0]].append((serial, parsed[1]))
    return history


def resolve(question: str, history: dict[str, list[tuple[int, str]]]) -> tuple[str, list[str], list[str]]:
    """Follow a question hop by hop over the newest facts: (answer, hop keys, relations)."""
    readings = [r for r in parse_questions(question) if r[0] in history]
    assert readings, f"question does not parse: {question!r}"
    key, chain = readings[0]
    subject, _, relation = key.partition("|")
    hops = []
    for rel in [relation, *chain]:
        hop_key = f"{subject}|{rel}"
        hops.append(hop_key)
        subject = max(history[hop_key])[1]
    return subject, hops, [relation, *chain]


def digest(records: dict) -> str:
    return hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()


# ------------------------------------------------------------------ generator
def test_schema_and_counts_at_6k(records_6k):
    assert set(records_6k) == {"sh", "mh"}
    assert records_6k["sh"]["context"] == records_6k["mh"]["context"]
    for split, record in records_6k.items():
        assert set(record) == {"context", "questions", "answers", "metadata"}
        source = f"factconsolidation_{split}_6k"
        assert record["metadata"]["source"] == source
        assert record["metadata"]["qa_pair_ids"] == [f"{source}_no{i}" for i in range(N_QUESTIONS)]
        assert len(record["questions"]) == len(record["answers"]) == N_QUESTIONS
        assert len(set(record["questions"])) == N_QUESTIONS
        assert all(isinstance(a, list) and a and all(isinstance(x, str) for x in a) for a in record["answers"])
        assert validate_record(record) == record
    context = records_6k["sh"]["context"]
    assert context.startswith("Here is a list of facts:\n0. ")
    assert [s for s, _ in parse_context(context)] == list(range(455))


@pytest.mark.parametrize("length", ["32k", "64k"])
def test_fact_counts_at_mid_lengths(length):
    record = generate_records(length, seed=1)["sh"]
    assert len(parse_context(record["context"])) == LENGTHS[length]


def test_fact_count_at_262k_generated_once():
    world = generate_world("262k", seed=0)
    assert len(world.facts) == 18_332
    assert len(world.sh_keys) == len(world.mh_chains) == N_QUESTIONS


def test_generation_is_deterministic_by_seed_and_across_processes(records_6k):
    assert digest(generate_records("6k", seed=0)) == digest(records_6k)
    assert generate_records("6k", seed=1)["sh"]["context"] != records_6k["sh"]["context"]
    code = ("import hashlib, json; from tepa_envs.facts.data import generate_records; "
            "print(hashlib.sha256(json.dumps(generate_records('6k', seed=0), sort_keys=True)"
            ".encode()).hexdigest())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "123", "PATH": ""})
    assert out.stdout.strip() == digest(records_6k)


def test_at_least_twelve_relations_and_every_fact_parses_to_its_key(world_6k, records_6k):
    parsed = [parse_fact(text) for _, text in parse_context(records_6k["sh"]["context"])]
    truth = [(world_6k.key_name(k), world_6k.entities[v].name) for _, k, v in world_6k.facts]
    assert parsed == truth
    assert len(RELATIONS) >= 12
    assert len({key.split("|")[1] for key, _ in truth}) >= 12


def test_overrides_come_later_with_wide_gaps(records_6k):
    history = fact_history(records_6k["sh"]["context"])
    overridden = {k: h for k, h in history.items() if len(h) > 1}
    assert len(overridden) >= N_QUESTIONS
    assert any(len(h) == 3 for h in overridden.values())
    for values in overridden.values():
        assert len({v for _, v in values}) == len(values), "an override must change the value"
        gaps = [b[0] - a[0] for a, b in zip(values, values[1:])]
        assert min(gaps) >= 455 // 10
    assert len(history) > len(overridden) + 50, "distractor facts that are never overridden"


def test_single_hop_questions_ask_overridden_keys_and_gold_is_the_newest(records_6k):
    history = fact_history(records_6k["sh"]["context"])
    record = records_6k["sh"]
    for question, answers in zip(record["questions"], record["answers"]):
        answer, hops, _ = resolve(question, history)
        assert len(hops) == 1 and len(history[hops[0]]) >= 2
        assert answers[0] == answer
        stale = min(history[hops[0]])[1]
        assert substring_exact_match(stale, answers) == 0.0


def test_multi_hop_chains_have_two_to_four_hops_and_follow_the_newest_fact(world_6k, records_6k):
    history = fact_history(records_6k["mh"]["context"])
    record = records_6k["mh"]
    hop_counts = []
    for question, answers, chain in zip(record["questions"], record["answers"], world_6k.mh_chains):
        answer, hops, relations = resolve(question, history)
        hop_counts.append(len(hops))
        assert hops == [world_6k.key_name(k) for k in chain]
        assert answers[0] == answer
        assert any(len(history[h]) > 1 for h in hops), "every chain has an overridden hop"
    assert set(hop_counts) == {2, 3, 4}
    assert 2.3 <= sum(hop_counts) / len(hop_counts) <= 2.9


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="length must be one of"):
        generate_records("7k")
    with pytest.raises(ValueError, match="seed must be >= 0"):
        generate_records("6k", seed=-1)
    with pytest.raises(TypeError, match="seed must be an int"):
        generate_records("6k", seed="0")


# --------------------------------------------------------------------- metric
@pytest.mark.parametrize("text, normalised", [
    ("The Eiffel Tower!", "eiffel tower"),
    ("A man, a plan, a canal: Panama", "man plan canal panama"),
    ("  An   apple\tpie. ", "apple pie"),
    ("theatre of the absurd", "theatre of absurd"),
    ("Hello-World's", "helloworlds"),
    ("", ""),
])
def test_normalisation_matches_memoryagentbench(text, normalised):
    assert normalize_answer(text) == normalised


def test_substring_exact_match_takes_the_best_alias():
    assert substring_exact_match("The answer is Paris, France.", ["Paris"]) == 1.0
    assert substring_exact_match("paris france", "Paris, France") == 1.0
    assert substring_exact_match("I think it is the USA.", ["United States of America", "USA"]) == 1.0
    assert substring_exact_match("Pari", ["Paris"]) == 0.0
    assert substring_exact_match("", ["Paris"]) == 0.0
    with pytest.raises(ValueError):
        substring_exact_match("x", [])
    with pytest.raises(TypeError):
        substring_exact_match(3, ["x"])


# --------------------------------------------------------------------- loader
@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_loader_round_trip(tmp_path, records_6k, suffix):
    path = write_records(records_6k.values(), tmp_path / f"facts{suffix}")
    loaded = load_records(path)
    assert loaded == list(records_6k.values())
    assert select_record(loaded, "mh", "6k") == records_6k["mh"]
    with pytest.raises(ValueError, match="no record with metadata.source"):
        select_record(loaded, "sh", "32k")


def test_loader_refuses_bad_files(tmp_path, records_6k):
    with pytest.raises(ValueError, match="no such file"):
        load_records(tmp_path / "missing.json")
    (tmp_path / "facts.csv").write_text("x")
    with pytest.raises(ValueError, match=r"\.json, \.jsonl or \.parquet"):
        load_records(tmp_path / "facts.csv")
    broken = dict(records_6k["sh"], answers=records_6k["sh"]["answers"][:-1])
    with pytest.raises(DataFormatError, match="100 questions but 99 answers"):
        write_records([broken], tmp_path / "broken.json")
    (tmp_path / "nocontext.jsonl").write_text(json.dumps({"questions": [], "answers": []}) + "\n")
    with pytest.raises(DataFormatError, match="lacks field"):
        load_records(tmp_path / "nocontext.jsonl")


def _row(**fields):
    row = {"context": "Here is a list of facts:\n0. Doka Letubu is married to Nuki Boputi.",
           "questions": ["Who is Doka Letubu married to?"], "answers": [["Nuki Boputi"]],
           "metadata": {"source": "factconsolidation_sh_6k"}}
    row.update(fields)
    return row


@pytest.mark.parametrize("fields, match", [
    ({"questions": "ab", "answers": ["a", "b"]}, r"\.questions must be a list, got str"),
    ({"questions": {"q": 1}, "answers": [["a"]]}, r"\.questions must be a list, got dict"),
    ({"questions": [], "answers": []}, r"\.questions is empty"),
    ({"questions": [""], "answers": [["a"]]}, r"\.questions\[0\] must be a non-empty string"),
    ({"questions": ["q", 3], "answers": [["a"], ["b"]]}, r"\.questions\[1\] must be a non-empty string"),
    ({"answers": "Nuki Boputi"}, r"\.answers must be a list, got str"),
    ({"answers": [["a"], ["b"]]}, r"1 questions but 2 answers"),
    ({"answers": [[]]}, r"\.answers\[0\] must be a string or a non-empty list of strings"),
    ({"answers": [[""]]}, r"\.answers\[0\] must be a string or a non-empty list of strings"),
    ({"answers": [{"a": 1}]}, r"\.answers\[0\] must be a string or a non-empty list of strings"),
    ({"context": "   "}, r"\.context must be a non-empty string"),
    ({"context": ["0. A fact."]}, r"\.context must be a non-empty string, got list"),
    ({"metadata": []}, r"\.metadata must be a dict, got list"),
    ({"metadata": "factconsolidation_sh_6k"}, r"\.metadata must be a dict, got str"),
    ({"metadata": {"source": 6}}, r"\.metadata\.source must be a string"),
    ({"metadata": {"qa_pair_ids": [{"id": 1}]}}, r"\.metadata\.qa_pair_ids\[0\] must be a string"),
])
def test_loader_validates_the_schema_naming_record_and_field(tmp_path, fields, match):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(_row()) + "\n" + json.dumps(_row(**fields)) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"rows\.jsonl\[1\]" + ".*" + match):
        load_records(path)


def test_error_names_the_records_source(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([_row(), _row(questions=[], answers=[])]), encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"rows\.json\[1\] \(metadata\.source 'factconsolidation_sh_6k'\)"):
        load_records(path)


@pytest.mark.parametrize("suffix, text", [
    (".json", "[" * 100_000 + "]" * 100_000),
    (".json", '{"context": ' * 100_000 + '"x"' + "}" * 100_000),
    (".jsonl", json.dumps(_row()) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n"),
], ids=["array", "object", "jsonl-line"])
def test_deeply_nested_json_is_a_data_format_error(tmp_path, suffix, text):
    path = tmp_path / f"deep{suffix}"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataFormatError, match="nested too deeply"):
        load_records(path)


@pytest.mark.parametrize("split", ["sh", "mh"])
def test_real_memoryagentbench_rows_keep_loading(split, real_rows):
    import gymnasium as gym

    import tepa_envs  # noqa: F401

    path = real_rows / f"factconsolidation_{split}_6k.json"
    (record,) = load_records(path)
    assert record["metadata"]["source"] == f"factconsolidation_{split}_6k" and len(record["questions"]) == 100
    env = gym.make("TEPA/FactConsolidation-v0", split=split, data_path=str(path))
    env.reset(seed=0)
    assert len(env.unwrapped.data.questions) == 100
    env.close()


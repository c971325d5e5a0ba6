"""Keys of related relations and of names with a lower-case head noun (extraction steps 7-9).

* Two genitive frames are one relation only when their relation nouns are synonyms (a
  shared WordNet noun sense, or one stem): nouns related otherwise (*father* and
  *mother* share the verb sense *beget*, *employer* and *employee* the derivation
  *employ*) name different relations, so a newer fact of one never overrides the other.
* The sentence's subject keeps the lower-case head noun of its noun phrase ("Tavora
  dollar is the currency of Nukoze": the currency is *Tavora dollar*).
* Name words go back to the entities before a frame is judged bare.
"""

import re

import pytest

from tepa_envs.facts.extraction import InducedFact, induce_facts, merge_synonymous
from tepa_envs.facts.shaped import generate_shaped

PEOPLE = ["Dora Kest", "Timo Varl", "Lina Osk", "Pero Halm", "Kira Dunn", "Vesa Molk", "Ivo Trent", "Alma Pesk"]
FIRMS = ["Zarka Group", "Pelo Works", "Mindu Corporation"]


def _related(noun: str, other: str) -> list[InducedFact]:
    """Facts of two genitive relations sharing their objects (the same people as values)."""
    facts = []
    for i in range(4):
        facts.append(InducedFact(PEOPLE[i], f"The {noun} of {{S}} is {{O}}", PEOPLE[i + 4]))
        facts.append(InducedFact(PEOPLE[(i + 1) % 4], f"The {other} of {{S}} is {{O}}", PEOPLE[i + 4]))
    return facts


@pytest.mark.parametrize("noun, other", [("father", "mother"), ("employer", "employee"), ("husband", "wife"),
                                         ("son", "daughter"), ("birthplace", "deathplace"),
                                         ("capital city", "largest city")])
def test_related_relation_nouns_keep_their_own_keys(noun, other, needs_wordnet):
    merged = merge_synonymous(_related(noun, other))
    assert {f.frame for f in merged if f is not None} == {f"The {noun} of {{S}} is {{O}}",
                                                           f"The {other} of {{S}} is {{O}}"}


@pytest.mark.parametrize("noun, other", [("writer", "author"), ("chair", "chairperson")])
def test_synonymous_relation_nouns_still_share_one_key(noun, other, needs_wordnet):
    merged = merge_synonymous(_related(noun, other) + _related(noun, other)[:2])
    assert len({f.frame for f in merged if f is not None}) == 1


def _sentences(length: str) -> list[str]:
    context = generate_shaped(length, 0)["sh"]["context"]
    return [re.sub(r"^\d+\.\s*", "", line).strip() for line in context.splitlines() if re.match(r"^\d+\.", line)]


def test_generated_fathers_and_mothers_are_two_relations(needs_wordnet):
    texts = _sentences("6k")
    seen = set()
    for text, fact in zip(texts, induce_facts(texts)):
        for noun in ("father", "mother"):
            if f" {noun} " in text:
                assert fact is not None and fact.frame == f"The {noun} of {{S}} is {{O}}", text
                seen.add(noun)
    assert seen == {"father", "mother"}


def test_a_lower_case_head_noun_after_the_subjects_name_is_part_of_the_entity():
    texts = ["Tavora dollar is the currency of Nukoze.", "Dasera dollar is the currency of Vezefa.",
             "Temisi College's location is Tusemeton.", "Pavo College's location is Dumeton."]
    facts = induce_facts(texts)
    assert [(f.subject, f.frame, f.object) for f in facts[:2]] == [
        ("Nukoze", "The currency of {S} is {O}", "Tavora dollar"),
        ("Vezefa", "The currency of {S} is {O}", "Dasera dollar")]
    # a possessive ends the subject's noun phrase: the noun after it is the relation
    assert [(f.subject, f.frame) for f in facts[2:]] == [("Temisi College", "The location of {S} is {O}"),
                                                        ("Pavo College", "The location of {S} is {O}")]


def test_an_adverb_before_the_copula_stays_in_the_frame(needs_wordnet):
    texts = ["Dora Kest still is the mayor of Raboze.", "Timo Varl still is the mayor of Bebadi.",
             "Lina Osk still is the mayor of Naluvi."]
    assert [f.subject for f in induce_facts(texts)] == ["Dora Kest", "Timo Varl", "Lina Osk"]


def test_name_words_go_back_before_a_frame_is_judged_bare():
    texts = []
    for i in range(4):
        a, b, c = PEOPLE[i], PEOPLE[i + 1], PEOPLE[i + 4]
        texts += [f"The father of {a} is {c}.", f"The mother of {b} is {c}.",
                  f"The son of {c} is {a}.", f"The employer of {a} is {FIRMS[i % 3]}."]
    for text, fact in zip(texts, induce_facts(texts)):
        noun = text.split()[1]
        assert fact is not None and fact.frame == f"The {noun} of {{S}} is {{O}}", (text, fact)
        assert fact.subject in text.split(" of ", 1)[1]


def test_an_adverb_links_through_its_adjective(needs_wordnet):
    # "normally" and "usually" are one WordNet adverb sense; "usually" comes from *usual*
    facts = [InducedFact(p, "The usual drink of {S} is {O}", "cocoa") for p in PEOPLE[:3]]
    facts += [InducedFact(PEOPLE[0], "{S} normally orders {O}", "cocoa"),
              InducedFact(PEOPLE[3], "{S} normally orders {O}", "lemonade")]
    assert {f.frame for f in merge_synonymous(facts)} == {"The usual drink of {S} is {O}"}


@pytest.mark.parametrize("known_as_people", [True, False])
def test_linked_frames_with_no_shared_value_merge_when_their_values_are_one_kind(known_as_people, needs_wordnet):
    # the old and new architect of a hall are different people: no value is shared; the
    # values are one kind when they are the subjects of a common frame ("lives next door to")
    halls = ["Zivu Hall", "Fido Hall", "Pize Hall"]
    facts = [InducedFact(h, "The architect of {S} is {O}", PEOPLE[i]) for i, h in enumerate(halls)]
    facts += [InducedFact(h, "{S} was designed by {O}", PEOPLE[i + 3]) for i, h in enumerate(halls)]
    if known_as_people:
        facts += [InducedFact(PEOPLE[i], "{S} lives next door to {O}", PEOPLE[7 - i]) for i in range(6)]
    merged = {f.frame for f in merge_synonymous(facts) if "Hall" in f.subject}
    assert merged == ({"The architect of {S} is {O}"} if known_as_people
                      else {"The architect of {S} is {O}", "{S} was designed by {O}"})


def test_a_name_opening_with_the_keys_alike_in_every_genitive_shape():
    # "The" before a name is a determiner, not the relation: possessive, genitive and
    # object-first sentences about "The Vale Rowing Club" take one key with one subject
    clubs = ["The Vale Rowing Club", "The Moor Rowing Club", "The Fen Rowing Club"]
    texts = [f"{c}'s home river is {r} Water." for c, r in zip(clubs, ["Zubi", "Kora", "Lemi"])]
    texts += [f"The home river of {c} is {r} Water." for c, r in zip(clubs, ["Tavi", "Bora", "Sumi"])]
    texts += [f"{r} Water is the home river of {c}." for c, r in zip(clubs, ["Pela", "Dura", "Rika"])]
    facts = induce_facts(texts)
    assert {f.frame for f in facts} == {"The home river of {S} is {O}"}
    assert [f.subject for f in facts] == [c[len("The "):] for c in clubs] * 3
    assert [f.object for f in facts][6:] == ["Pela Water", "Dura Water", "Rika Water"]

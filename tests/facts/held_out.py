"""Held-out fact and question forms: a FactConsolidation record in sentence forms the
extractor, the relation lexicon and the generator have never seen.

Nothing here is used to build the extractor (tepa_envs/facts/extraction.py), the
question reader (agents/readers/questions.py, lexicon.py) or the generator's
templates (tepa_envs/facts/data.py); a test checks that none of the forms'
constant phrases occur in those files. The questions are written as a person
would ask them, some paraphrasing the fact's words ("Who mentored X?" for
"The mentor of X was Y"), some reusing them.
"""

from __future__ import annotations

import numpy as np

# relation: (subject type, object type, fact form, single-hop question, noun phrase for multi-hop)
FORMS: dict[str, tuple[str, str, str, str, str]] = {
    "pet": ("person", "pet", "{s} keeps a pet named {o}.", "What is the name of {s}'s pet?",
            "the pet of {s}"),
    "colour": ("person", "colour", "The favourite colour of {s} is {o}.", "Which colour does {s} like best?",
               "the favourite colour of {s}"),
    "trade": ("person", "trade", "{s} was trained as a {o}.", "What was {s} trained to be?",
              "the trade {s} was trained in"),
    "grew_up": ("person", "town", "{s} grew up in the town of {o}.", "Which town did {s} grow up in?",
                "the town where {s} grew up"),
    "mentor": ("person", "person", "The mentor of {s} was {o}.", "Who mentored {s}?",
               "the mentor of {s}"),
    "club": ("person", "club", "{s} supports the football club {o}.", "Which football club does {s} support?",
             "the club that {s} supports"),
    "island": ("person", "island", "{s} lives on the island of {o}.", "On which island does {s} live?",
               "the island {s} lives on"),
    "mascot": ("club", "mascot", "The mascot of {s} is {o}.", "What is the mascot of {s}?",
               "the mascot of {s}"),
    "ground": ("club", "town", "{s} plays its home games in the town of {o}.",
               "In which town does {s} play its home games?", "the home town of {s}"),
    "river": ("town", "river", "{s} lies on the river {o}.", "Which river does {s} lie on?",
              "the river {s} lies on"),
    "peak": ("island", "peak", "The highest peak of {s} is {o}.", "What is the highest peak of {s}?",
             "the highest peak of {s}"),
    # paraphrases the relation lexicon can bridge (wife ~ wedded, die ~ passed away)
    "wedded": ("person", "person", "{s} is wedded to {o}.", "Who is the husband or wife of {s}?",
               "the spouse of {s}"),
    "village": ("person", "village", "{s} passed away in the village of {o}.", "Where did {s} die?",
                "the village where {s} died"),
    "salary": ("person", "club", "{s} draws a salary from {o}.", "Which club pays the salary of {s}?",
               "the club paying {s}"),
}

# multi-hop question forms over the held-out relations (first relation applies to the anchor)
CHAINS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("mentor", "club", "mascot"), "What is the mascot of the football club supported by the mentor of {s}?"),
    (("grew_up", "river"), "On which river lies the town where {s} grew up?"),
    (("mentor", "island", "peak"), "What is the highest peak on the island where {s}'s mentor lives?"),
    (("club", "ground"), "In which town does the football club that {s} supports play its home games?"),
    (("mentor", "pet"), "What is the name of the pet kept by the mentor of {s}?"),
    (("club", "ground", "river"), "Which river does the home town of the football club {s} supports lie on?"),
    (("mentor", "trade"), "What was {s}'s mentor trained as?"),
    (("island", "peak"), "Which peak is the highest on the island {s} lives on?"),
    (("mentor", "wedded", "village"), "In which village did the wife or husband of {s}'s mentor die?"),
    (("wedded", "salary", "mascot"), "What is the mascot of the club that pays the salary of {s}'s spouse?"),
)

_SYLLABLES = [c + v for c in "bdfghklmnprstvz" for v in "aeiou"]
_TRADE_WORDS = ["carpenter", "glassblower", "pastry chef", "welder", "luthier", "nurse", "stonemason", "pilot",
                "tailor", "locksmith", "baker", "jeweller", "cooper", "bookbinder", "farrier", "potter"]
_COLOURS = ["teal", "crimson", "ochre", "lilac", "navy blue", "saffron", "mint green", "charcoal", "amber",
            "coral", "indigo", "olive", "maroon", "turquoise", "mustard", "lavender"]


def _names(rng: np.random.Generator, n: int, template: str, used: set[str]) -> list[str]:
    names: list[str] = []
    while len(names) < n:
        parts = rng.choice(len(_SYLLABLES), size=5)
        a = "".join(_SYLLABLES[i] for i in parts[:2]).capitalize()
        b = "".join(_SYLLABLES[i] for i in parts[2:]).capitalize()
        name = template.format(a=a, b=b)
        if name not in used:
            used.add(name)
            names.append(name)
    return names


def _varied(rng: np.random.Generator, n: int, templates: tuple[str, ...], used: set[str]) -> list[str]:
    """Names of one kind in several patterns, as real names are (not all "Mount X")."""
    return [_names(rng, 1, templates[i % len(templates)], used)[0] for i in range(n)]


def held_out_records(seed: int = 0, n_people: int = 40, override_share: float = 0.4) -> dict[str, dict]:
    """``{"sh": record, "mh": record, "world": ...}`` in the held-out forms.

    Every (subject, relation) gets a fact; ``override_share`` of them are overridden
    later in the list by a fact with another object. SH asks about every key with
    a question (overridden or not); MH follows the newest value at every hop.
    """
    rng = np.random.default_rng(seed)
    used: set[str] = set()
    entities = {
        "person": _names(rng, n_people, "{a} {b}", used),
        "club": _varied(rng, 8, ("{a} Rovers", "{a} United", "Real {a}", "{a} {b}", "Athletic {a}"), used),
        "town": _varied(rng, 10, ("{a}ville", "{a}", "Port {a}", "{a} Springs", "{a}ton"), used),
        "island": _varied(rng, 6, ("{a} Isle", "{a}", "Isla {a}", "{a} Island"), used),
        "river": _varied(rng, 8, ("{a}wash", "{a}", "{a} Creek", "Rio {a}"), used),
        "peak": _varied(rng, 8, ("Mount {a}", "{a} Peak", "{a}horn", "{a}"), used),
        "mascot": _varied(rng, 12, ("{a} the Badger", "Captain {a}", "{a}", "Sir {a} {b}", "{a} the Owl"), used),
        "pet": _names(rng, 30, "{a}", used),
        "village": _varied(rng, 10, ("{a} Green", "{a}by", "Little {a}", "{a}"), used),
        "trade": list(_TRADE_WORDS),
        "colour": list(_COLOURS),
    }
    history: dict[tuple[str, str], list[str]] = {}
    for relation, (subject_type, object_type, *_rest) in FORMS.items():
        for subject in entities[subject_type]:
            pool = [o for o in entities[object_type] if o != subject]
            first = pool[int(rng.integers(len(pool)))]
            values = [first]
            if rng.random() < override_share:
                values.append(next(o for o in rng.permutation(pool).tolist() if o != first))
            history[(subject, relation)] = values
    # originals first in random order, overrides after them in random order
    keys = list(history)
    order = rng.permutation(len(keys)).tolist()
    facts = [(keys[i], history[keys[i]][0]) for i in order]
    facts += [(keys[i], history[keys[i]][1]) for i in rng.permutation(len(keys)).tolist()
              if len(history[keys[i]]) > 1]
    lines = ["Here is a list of facts:"] + [
        f"{n}. {FORMS[rel][2].format(s=subject, o=value)}" for n, ((subject, rel), value) in enumerate(facts)]
    context = "\n".join(lines)
    newest = {key: values[-1] for key, values in history.items()}

    sh_keys = [keys[i] for i in rng.permutation(len(keys))[:100].tolist()]
    sh = [(FORMS[rel][3].format(s=subject), newest[(subject, rel)]) for subject, rel in sh_keys]
    mh: list[tuple[str, str]] = []
    for i in range(60):
        relations, form = CHAINS[i % len(CHAINS)]
        anchor = entities[FORMS[relations[0]][0]][int(rng.integers(len(entities[FORMS[relations[0]][0]])))]
        value = anchor
        for rel in relations:
            value = newest[(value, rel)]
        mh.append((form.format(s=anchor), value))

    def record(split: str, qa: list[tuple[str, str]]) -> dict:
        source = f"factconsolidation_{split}_6k"
        return {"context": context, "questions": [q for q, _ in qa], "answers": [[a] for _, a in qa],
                "metadata": {"source": source, "qa_pair_ids": [f"{source}_no{i}" for i in range(len(qa))]}}

    never_overridden = sum(len(history[k]) == 1 for k in sh_keys) / len(sh_keys)
    return {"sh": record("sh", sh), "mh": record("mh", mh),
            "world": {"facts": facts, "newest": newest, "never_overridden_sh": never_overridden}}


__all__ = ["CHAINS", "FORMS", "held_out_records"]

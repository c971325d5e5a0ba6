"""Data-driven fact extraction: relation frames induced from a record's own sentences.

No list of sentence forms is used. Given all fact sentences of a record,
:func:`induce_facts` finds for each sentence a *frame* ``P {S} M {O}``: a
constant prefix ``P`` (possibly empty), the subject slot, a constant middle
``M`` and the object slot, which is the sentence's tail (the value a later
fact may override). Frames are induced from the data alone:

1. Every split of a sentence into ``P``/``S``/``M``/``O`` (word tokens; a
   possessive ``'s`` is its own token) is a candidate frame ``(P, M)``.
2. A candidate is *attested* when at least two sentences fit it with at least
   two different subjects and two different objects (a frame built from one
   sentence, from one subject's facts or around one object says nothing
   about a relation).
3. Each sentence first takes its attested frame with the most constant words
   (ties: the frame more sentences fit, then the shorter prefix).
4. Minimum description length: a frame that absorbed words of its fillers
   ("Thomas {S} was born in the city of {O}" for two people named Thomas, "{S}
   is a citizen of United {O}", "Karen Armstrong is affiliated with the {S} of
   {O}") is given up when that shortens the description of the record. The
   description counts the constant words of every frame in use once and the
   words of every distinct entity string (subject or object) once; frames are
   visited from the least used, and all sentences of a frame move together,
   each to the alternative frame that adds the fewest new words, when the
   move makes the description strictly shorter. Entities shared between
   facts (the object of one fact is the subject of another, as in multi-hop
   chains) are therefore kept whole.
5. Facts about the same subject that share a long prefix and differ in the
   tail are the same subject and relation: when one sentence's keyed prefix
   ``P S M`` is a proper word prefix of another's, the longer one takes the
   shorter boundary.
6. Scale: a record of more than :data:`SAMPLE` sentences induces its frames
   from an evenly spread sample of that many and keys every sentence by the
   fitting sampled frame with the most constant words; sentences that fit
   none are induced again together with the sample.

7. One relation, one key, whatever the surface form (:func:`canonical_facts`).
   English states "the N of B is A" three ways: "The N of B is A", "B's N is
   A" and, object first, "A is the N of B". Frames of these three shapes (a
   copula, the relation noun ``N``) take one canonical frame, ``The N of {S}
   is {O}``, with the possessor ``B`` as the subject whatever its place in the
   sentence. Frames that name one relation in other words are then merged
   (:func:`merge_synonymous`): their relation words match (same stem, or a
   shared WordNet sense or derivation, :mod:`tepa_envs.facts.wordnet`) and
   their objects are of one kind (they share an object). Two genitive frames
   are one relation only when their nouns are *synonyms* (a shared WordNet
   noun sense, or one stem): nouns related otherwise name different
   relations of one family (*father* and *mother* share only the verb sense
   *beget*, *employer* and *employee* the derivation *employ*; *husband* and
   *wife*, *son* and *daughter* are co-hyponyms), and merging them would let a
   fact of one override the other. These are rules of English grammar and a
   general lexical database, not of any data set.

8. Name words back to the entities (:func:`_name_parts`): capitalised frame
   words next to a slot belong to the name in it ("Mount {S}", "{S} Rowing
   Club"; a possessive ``'s`` ends the name). When the subject slot opens the
   sentence and its name ends in a name word, the lower-case nouns between it
   and the copula are the head noun of the subject's noun phrase ("Tavora
   dollar is the currency of X": the entity is *Tavora dollar*); adverbs
   ("still", "also") and function words are not.
9. A frame left without relation words ("{S} is {O}", after step 8 too) is
   read by the genitive shapes of English directly
   (:func:`_syntactic_genitive`).

A sentence no attested frame fits is not keyed (``None``). The key is
``"<subject>|<frame>"`` with the frame as a slot string,
e.g. ``"Victoria Beckham|{S} is married to {O}"``.

Question understanding (mapping a question to keys and hops) is the reader's
work: :mod:`tepa_envs.agents.readers.questions`.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

SUBJECT, OBJECT = "{S}", "{O}"

Words = tuple[str, ...]
Frame = tuple[Words, Words]   # (prefix, middle)
_POSSESSIVE = re.compile(r"^(.*\w)('s|’s)$")


@dataclass(frozen=True, slots=True)
class InducedFact:
    subject: str
    frame: str     # "P {S} M {O}"
    object: str

    @property
    def key(self) -> str:
        return f"{self.subject}|{self.frame}"

    @property
    def head(self) -> str:
        """The sentence without its object: the frame with the subject filled in."""
        return self.frame.replace(SUBJECT, self.subject).replace(OBJECT, "").strip()


def _tokens(text: str) -> Words:
    text = text.strip()
    if text.endswith("."):
        text = text[:-1]
    words: list[str] = []
    for word in text.split():
        match = _POSSESSIVE.match(word)
        words.extend(match.groups() if match else (word,))
    return tuple(words)


def _join(words: Sequence[str]) -> str:
    return " ".join(words).replace(" 's", "'s").replace(" ’s", "’s")


def _frame(prefix: Sequence[str], middle: Sequence[str]) -> str:
    return _join([*prefix, SUBJECT, *middle, OBJECT])


def _size(frame: Frame) -> int:
    return len(frame[0]) + len(frame[1])


SAMPLE = 2000
"""Records with more sentences induce their frames from an evenly spread sample of
this many sentences and key every sentence by the sample's frames (step 6)."""


def induce_facts(texts: Sequence[str], sample: int | None = SAMPLE) -> list[InducedFact | None]:
    """``(subject, frame, object)`` of every sentence, induced from all of them (see the module)."""
    sentences = [_tokens(t) for t in texts]
    if sample is not None and len(sentences) > sample:
        chosen, fillers = _by_sampled_frames(sentences, sample)
    else:
        options = _attested_frames(sentences)
        chosen = [max(opts, key=lambda f: (_size(f), opts[f][2], -len(f[0]))) if opts else None
                  for opts in options]
        _shorten_description(chosen, options)
        fillers = [None if f is None else options[n][f][:2] for n, f in enumerate(chosen)]
    # facts about one subject and relation: a keyed prefix that extends another keyed
    # prefix absorbed the start of its object
    heads: set[Words] = set()
    for n, filler in enumerate(fillers):
        if filler is not None:
            heads.add(sentences[n][:len(sentences[n]) - len(filler[1])])
    facts: list[InducedFact | None] = []
    for n, frame in enumerate(chosen):
        filler = fillers[n]
        if frame is None or filler is None:
            facts.append(None)
            continue
        (prefix, middle), (subject, obj) = frame, filler
        words = sentences[n]
        head_len = len(words) - len(obj)
        start = len(prefix) + len(subject) + 1
        shorter = next((h for h in range(start, head_len) if words[:h] in heads), None)
        if shorter is not None:
            middle, obj = words[len(prefix) + len(subject):shorter], words[shorter:]
        facts.append(InducedFact(_join(subject), _frame(prefix, middle), _join(obj)))
    # name words back to the entities first: a frame left without relation words is bare
    facts = [_name_parts(f) for f in facts]
    facts = [(_syntactic_genitive(sentences[n]) or f) if _bare(f) else f for n, f in enumerate(facts)]
    return merge_synonymous(canonical_facts(facts))


_FUNCTION = frozenset("""the a an this that these those his her its their our my your in on at of for by with
    from to and or as it he she they we there here when where who which what whose""".split())


def _name_word(word: str) -> bool:
    """A word that can only be part of a proper name: capitalised and not a function word."""
    return word[:1].isupper() and word.lower() not in _FUNCTION and word not in ("'s", "’s")


def _name_parts(fact: InducedFact | None) -> InducedFact | None:
    """Step 8 of the module: capitalised frame words next to a slot are part of the name
    in that slot (English writes proper names, and only them, capitalised mid-sentence:
    "Mount {S}", "{S} Rowing Club", "the peak Mount {O}"), so they go back to the entity;
    so do the lower-case head nouns between a sentence-initial subject's name and the
    copula ("Tavora dollar is ...")."""
    if fact is None:
        return None
    words = [w for word in fact.frame.split()
             for w in ((word[:-2], word[-2:]) if word in (SUBJECT + "'s", SUBJECT + "’s") else _tokens(word))]
    size = len(words)
    subject, obj = list(_tokens(fact.subject)), list(_tokens(fact.object))
    s = words.index(SUBJECT)
    while s > 0 and _name_word(words[s - 1]):
        subject.insert(0, words.pop(s - 1))
        s -= 1
    while s + 1 < len(words) and words[s + 1] != OBJECT and _name_word(words[s + 1]):
        subject.append(words.pop(s + 1))
    o = words.index(OBJECT)
    while o > s + 1 and _name_word(words[o - 1]):
        obj.insert(0, words.pop(o - 1))
        o -= 1
    if s == 0 and subject and _name_word(subject[-1]):
        # the sentence's subject: lower-case nouns between the name and the copula are the
        # head noun of its noun phrase ("Tavora dollar is ...", "Kesa river was ...")
        c = next((i for i, w in enumerate(words) if w in _COPULAS), 0)
        if 1 < c < o and all(_head_word(w) for w in words[1:c]):
            subject.extend(words[1:c])
            del words[1:c]
    if len(words) == size:
        return fact
    return InducedFact(_join(subject), _join(words), _join(obj))


_COPULAS = ("is", "was", "are", "were")


def _head_word(word: str) -> bool:
    """A lower-case word that can end a noun phrase: not a function word and, when WordNet
    is installed, a noun that is never an adverb ("dollar", not "also" or "still")."""
    from tepa_envs.facts.wordnet import wordnet

    if not word[:1].islower() or word in _FUNCTION:
        return False
    net = wordnet()
    return net is None or (net.has_pos(word, "n") and not net.has_pos(word, "r"))


def _bare(fact: InducedFact | None) -> bool:
    """No frame, or a frame without relation words ("{S} is {O}", "{S} of {O}"): nothing
    in the frame names the relation."""
    return fact is None or not _relation_words(fact.frame)


def _syntactic_genitive(words: Words) -> InducedFact | None:
    """Step 9: a sentence no frame with relation words fits, read by the genitive shapes of
    English directly ("X's N is Y", "The N of X is Y", "Y is the N of X"), the relation
    noun ``N`` a run of lower-case words; else ``None``."""
    text = list(words)
    copulas = [i for i, w in enumerate(text) if w in ("is", "was", "are", "were")]
    if len(copulas) != 1:
        return None
    c = copulas[0]
    left, right = text[:c], text[c + 1:]
    if not left or not right:
        return None

    def noun_run(part: list[str]) -> int:
        n = 0
        while n < len(part) and part[n][:1].islower() and part[n] not in _FUNCTION:
            n += 1
        return n

    if "'s" in left or "’s" in left:      # X's N is Y
        at = max(i for i, w in enumerate(left) if w in ("'s", "’s"))
        n = noun_run(left[at + 1:])
        if at > 0 and n and at + 1 + n == len(left):
            return InducedFact(_join(left[:at]), f"The {_join(left[at + 1:])} of {SUBJECT} is {OBJECT}",
                               _join(right))
    for part, other, swapped in ((left, right, False), (right, left, True)):
        if len(part) > 3 and part[0].lower() == "the":
            n = noun_run(part[1:])
            if n and len(part) > n + 2 and part[n + 1] == "of":
                holder = part[n + 2:]
                if swapped:
                    return InducedFact(_join(holder), f"The {_join(part[1:n + 1])} of {SUBJECT} is {OBJECT}",
                                       _join(other))
                return InducedFact(_join(holder), f"The {_join(part[1:n + 1])} of {SUBJECT} is {OBJECT}",
                                   _join(other))
    return None


_COPULA = r"(?:is|was|are|were)"
_GENITIVE_FORMS = (
    (re.compile(r"^(?:the|a|an) (?P<n>.+) of (?:the )?\{S\} " + _COPULA + r" \{O\}$", re.I), False),
    (re.compile(r"^(?:the )?\{S\}['’]s (?P<n>.+) " + _COPULA + r" \{O\}$", re.I), False),
    (re.compile(r"^\{S\} " + _COPULA + r" the (?P<n>.+) of (?:the )?\{O\}$", re.I), True),   # object first
)


def canonical_frame(frame: str) -> tuple[str, bool] | None:
    """``(canonical frame, roles swapped)`` of a genitive frame ("The N of {S} is {O}",
    "{S}'s N is {O}", "{S} is the N of {O}"), else ``None``."""
    for pattern, swapped in _GENITIVE_FORMS:
        match = pattern.match(frame)
        if match:
            return f"The {match.group('n').lower()} of {SUBJECT} is {OBJECT}", swapped
    return None


def canonical_facts(facts: Sequence[InducedFact | None]) -> list[InducedFact | None]:
    """Step 7 of the module, first half: genitive frames to ``The N of {S} is {O}``, the
    possessor as the subject."""
    out: list[InducedFact | None] = []
    for fact in facts:
        canonical = None if fact is None else canonical_frame(fact.frame)
        if fact is None or canonical is None:
            out.append(fact)
        elif canonical[1]:
            out.append(InducedFact(fact.object, canonical[0], fact.subject))
        else:
            out.append(InducedFact(fact.subject, canonical[0], fact.object))
    return out


_FRAME_STOP = frozenset("""a an the of in on at to by for with from as and or is are was were be been being
    has have had its his her their s named called""".split())


def _relation_words(frame: str) -> tuple[str, ...]:
    text = frame.replace(SUBJECT, " ").replace(OBJECT, " ").replace("'s", " ").replace("’s", " ")
    return tuple(w for w in re.findall(r"[^\W_]+", text.lower()) if w not in _FRAME_STOP)


def merge_synonymous(facts: Sequence[InducedFact | None]) -> list[InducedFact | None]:
    """Step 7, second half: frames naming one relation in other words take one frame.

    * Two frames whose relation words match in both directions (every word of each
      matches a word of the other: same stem, or a shared WordNet sense or
      derivation) and that share an object take the more used frame. When both
      are genitive frames, their words must be synonyms as nouns (same stem or a
      shared noun sense): *writer* ~ *author*, not *father* ~ *mother* (they
      share the verb sense *beget*) nor *employer* ~ *employee* (the derivation
      *employ*).
    * A frame that names its relation otherwise ("{S} rents a room from {O}") is
      *linked* to a genitive frame ("The landlord of {S} is {O}") when a relation word
      of one matches a word of the other, directly or through the other's WordNet
      definition (*landlord*: "a landowner who leases to others"; *lease* ~ *rent*),
      and the two share a subject and values of one kind (a shared object, or objects
      that are the subjects of a common frame: two architects of a hall are both
      people someone "lives next door to"), where a merge is what lets a newer fact
      override an older one. The
      frame takes the genitive frame it links to most (by linked words, then use);
      a tie merges nothing.

    Frames are merged at most into one other frame each."""
    from tepa_envs.facts.wordnet import wordnet

    net = wordnet()
    usage = Counter(f.frame for f in facts if f is not None)
    objects: dict[str, set[str]] = defaultdict(set)
    subjects: dict[str, set[str]] = defaultdict(set)
    frames_about: dict[str, set[str]] = defaultdict(set)
    for f in facts:
        if f is not None:
            objects[f.frame].add(f.object)
            subjects[f.frame].add(f.subject)
            frames_about[f.subject].add(f.frame)
    concepts: dict[str, frozenset[str]] = {}
    definitions: dict[str, frozenset[str]] = {}
    kinds: dict[str, frozenset[str]] = {}

    def kind(frame: str) -> frozenset[str]:
        """What the frame's values are known as: the frames some of them are the subject of."""
        if frame not in kinds:
            kinds[frame] = frozenset(x for o in objects[frame] for x in frames_about.get(o, ()))
        return kinds[frame]

    def senses(word: str) -> frozenset[str]:
        if word not in concepts:
            concepts[word] = net.concepts(word) if net is not None else frozenset()
        return concepts[word]

    def defined(word: str) -> frozenset[str]:
        if word not in definitions:
            definitions[word] = net.defined(word, "n") | net.defined(word, "v") if net is not None else frozenset()
        return definitions[word]

    def match(a: str, b: str) -> bool:
        return a == b or (len(a) > 3 and len(b) > 3 and a[:4] == b[:4] and _stem(a) == _stem(b)) \
            or bool(senses(a) & senses(b))

    nouns: dict[str, frozenset[str]] = {}

    def noun_senses(word: str) -> frozenset[str]:
        if word not in nouns:
            nouns[word] = net.senses(word, "n") if net is not None else frozenset()
        return nouns[word]

    def synonym(a: str, b: str) -> bool:
        """Relation nouns naming one relation: the same stem, or a shared noun sense."""
        return a == b or (len(a) > 3 and len(b) > 3 and a[:4] == b[:4] and _stem(a) == _stem(b)) \
            or bool(noun_senses(a) & noun_senses(b))

    def linked(a: str, b: str) -> bool:
        return match(a, b) or bool(senses(a) & defined(b)) or bool(senses(b) & defined(a))

    def covers(xs: tuple[str, ...], ys: tuple[str, ...], same: Callable[[str, str], bool] = match) -> bool:
        return bool(xs) and all(any(same(x, y) for y in ys) for x in xs)

    frames = sorted(usage, key=lambda f: (-usage[f], f))
    words = {f: _relation_words(f) for f in frames}
    into: dict[str, str] = {}
    for i, frame in enumerate(frames):
        for target in frames[:i]:
            if target in into:
                continue
            # two genitive frames name their relations by nouns: one relation only when the
            # nouns are synonyms (to father ~ to mother: *beget*, employer ~ employee: *employ*)
            same = synonym if GENITIVE.match(frame) and GENITIVE.match(target) else match
            if covers(words[frame], words[target], same) and covers(words[target], words[frame], same) \
                    and objects[frame] & objects[target]:
                into[frame] = target
                break
    genitive = [f for f in frames if f not in into and GENITIVE.match(f)]
    for frame in frames:
        if frame in into or frame in genitive or not words[frame]:
            continue
        scored = []
        for target in genitive:
            if not (subjects[frame] & subjects[target] and (objects[frame] & objects[target]
                                                            or kind(frame) & kind(target))):
                continue
            links = sum(any(linked(x, y) for y in words[target]) for x in words[frame]) \
                + sum(any(linked(y, x) for x in words[frame]) for y in words[target])
            if links:
                scored.append((links, usage[target], target))
        scored.sort(reverse=True)
        if scored and (len(scored) == 1 or scored[0][0] > scored[1][0]):
            into[frame] = scored[0][2]
    if not into:
        return list(facts)
    return [f if f is None or f.frame not in into else InducedFact(f.subject, into[f.frame], f.object)
            for f in facts]


GENITIVE = re.compile(r"^The (?P<n>.+) of \{S\} is \{O\}$")
"""The canonical genitive frame of step 7."""


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s", "er"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: len(word) - len(suffix)]
    return word


def _by_sampled_frames(sentences: Sequence[Words], sample: int
                       ) -> tuple[list[Frame | None], list[tuple[Words, Words] | None]]:
    """Step 6: frames induced on a spread sample; every sentence takes the fitting
    frame with the most constant words (then the more used one); sentences no
    sampled frame fits are induced again together with the sample."""
    step = len(sentences) / sample
    picked = sorted({int(i * step) for i in range(sample)})
    options = _attested_frames([sentences[i] for i in picked])
    chosen = [max(opts, key=lambda f: (_size(f), opts[f][2], -len(f[0]))) if opts else None for opts in options]
    _shorten_description(chosen, options)
    usage = Counter(f for f in chosen if f is not None)
    frames = sorted(usage, key=lambda f: (-_size(f), -usage[f], len(f[0])))
    out_frames: list[Frame | None] = []
    out_fillers: list[tuple[Words, Words] | None] = []
    missing: list[int] = []
    for n, words in enumerate(sentences):
        fit = _first_fit(words, frames)
        if fit is None:
            missing.append(n)
        out_frames.append(None if fit is None else fit[0])
        out_fillers.append(None if fit is None else fit[1:])
    if missing:
        extra = sorted(set(missing) | set(picked))
        again = induce_facts([" ".join(sentences[i]) for i in extra], sample=None)
        for i, fact in zip(extra, again):
            if i in set(missing) and fact is not None:
                words = sentences[i]
                obj = _tokens(fact.object)
                head = words[:len(words) - len(obj)]
                subject = _tokens(fact.subject)
                prefix_len = next((p for p in range(len(head) - len(subject) + 1)
                                   if head[p:p + len(subject)] == subject), 0)
                out_frames[i] = (head[:prefix_len], head[prefix_len + len(subject):])
                out_fillers[i] = (subject, obj)
    return out_frames, out_fillers


_SEP = "\x1f"


def _first_fit(words: Words, frames: Sequence[Frame]) -> tuple[Frame, Words, Words] | None:
    """The first of ``frames`` that ``words`` fit (shortest subject), with its fillers."""
    text = _SEP + _SEP.join(words) + _SEP
    for frame in frames:
        prefix, middle = frame
        start = len(_SEP.join(prefix)) + 1 if prefix else 0
        if prefix and not text.startswith(_SEP + _SEP.join(prefix) + _SEP):
            continue
        # the subject takes at least one word, the object at least one
        first = text.find(_SEP, start + 1)
        at = text.find(_SEP + _SEP.join(middle) + _SEP, first)
        if first < 0 or at < 0:
            continue
        end = at + len(_SEP.join(middle)) + 2
        if end >= len(text):
            continue
        i, j = len(prefix), text.count(_SEP, 0, at)
        k = j + len(middle)
        return frame, words[i:j], words[k:]
    return None


def _attested_frames(sentences: Sequence[Words]) -> list[dict[Frame, tuple[Words, Words, int]]]:
    """Per sentence, every attested frame it fits: ``frame -> (subject, object, support)``."""
    # a frame two sentences fit has a prefix and a middle that two sentences contain:
    # candidates with a rarer prefix or middle are never built
    prefixes: Counter[Words] = Counter()
    grams: Counter[Words] = Counter()
    for words in sentences:
        prefixes.update({words[:i] for i in range(len(words) - 2)})
        grams.update({words[j:k] for j in range(1, len(words) - 1) for k in range(j + 1, len(words))})
    fits: dict[Frame, list[tuple[int, Words, Words]]] = defaultdict(list)
    for n, words in enumerate(sentences):
        size = len(words)
        for i in range(size - 2):
            prefix = words[:i]
            if prefixes[prefix] < 2:
                break
            for j in range(i + 1, size - 1):
                for k in range(j + 1, size):
                    middle = words[j:k]
                    if grams[middle] < 2:
                        break
                    fits[(prefix, middle)].append((n, words[i:j], words[k:]))
    options: list[dict[Frame, tuple[Words, Words, int]]] = [{} for _ in sentences]
    for frame, rows in fits.items():
        if len(rows) < 2:
            continue
        members = {r[0] for r in rows}
        if len(members) < 2 or len({r[1] for r in rows}) < 2 or len({r[2] for r in rows}) < 2:
            continue
        for n, subject, obj in rows:
            # a sentence that fits a frame in two ways takes the shorter subject
            if frame not in options[n] or len(subject) < len(options[n][frame][0]):
                options[n][frame] = (subject, obj, len(members))
    return options


def _shorten_description(chosen: list[Frame | None],
                         options: Sequence[dict[Frame, tuple[Words, Words, int]]]) -> None:
    """Step 4 of the module: move whole frames' sentences while the description shrinks."""
    lexicon: Counter[Words] = Counter()
    usage: Counter[Frame] = Counter()
    members: dict[Frame, list[int]] = defaultdict(list)
    for n, frame in enumerate(chosen):
        if frame is not None:
            subject, obj, _ = options[n][frame]
            lexicon[subject] += 1
            lexicon[obj] += 1
            usage[frame] += 1
            members[frame].append(n)
    for _ in range(4):
        changed = _affix_moves(chosen, options, lexicon, usage, members)
        for frame in sorted(usage, key=lambda f: (usage[f], f)):
            if usage[frame] == 0:
                continue
            group = [n for n in members[frame] if chosen[n] == frame]
            moves = _group_move(frame, group, options, lexicon, usage)
            if moves is None:
                continue
            for n, target in moves:
                _move(n, frame, target, chosen, options, lexicon, usage, members)
            changed = True
        if not changed:
            return


def _affix_moves(chosen: list[Frame | None], options: Sequence[dict[Frame, tuple[Words, Words, int]]],
                 lexicon: Counter[Words], usage: Counter[Frame], members: dict[Frame, list[int]]) -> bool:
    """Give one affix back to the entities in every frame that absorbed it, jointly.

    An affix is a run of frame words next to a slot (``Republic of`` before
    ``{O}`` in "{S} is a citizen of Republic of {O}" and before ``{S}`` in "The
    capital of Republic of {S} is {O}"): frames that each absorbed the same start
    (or end) of their entities are moved together to their shorter parents when
    that shortens the description. Returns whether anything moved."""
    groups: dict[tuple[str, Words], dict[Frame, Frame]] = defaultdict(dict)
    for frame, used in usage.items():
        if used <= 0:
            continue
        prefix, middle = frame
        for k in range(1, len(prefix) + 1):                      # the subject's start
            groups[("start", prefix[-k:])].setdefault(frame, (prefix[:-k], middle))
        for k in range(1, len(middle)):
            groups[("end", middle[:k])].setdefault(frame, (prefix, middle[k:]))     # the subject's end
            groups[("start", middle[-k:])].setdefault(frame, (prefix, middle[:-k]))  # the object's start
    moved = False
    for _, parents in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0])):
        if len(parents) < 2 or any(usage[f] <= 0 for f in parents):
            continue
        change: Counter[Words] = Counter()
        frame_delta = 0
        moves: list[tuple[int, Frame, Frame]] = []
        opened: set[Frame] = set()
        for frame, parent in parents.items():
            group = [n for n in members[frame] if chosen[n] == frame]
            if not all(parent in options[n] for n in group):
                break
            frame_delta -= _size(frame)
            if usage[parent] == 0 and parent not in opened and parent not in parents:
                frame_delta += _size(parent)
                opened.add(parent)
            for n in group:
                for x in options[n][frame][:2]:
                    change[x] -= 1
                for x in options[n][parent][:2]:
                    change[x] += 1
                moves.append((n, frame, parent))
        else:
            delta = frame_delta
            for x, d in change.items():
                before, after = lexicon[x], lexicon[x] + d
                if before > 0 and after <= 0:
                    delta -= len(x)
                elif before <= 0 and after > 0:
                    delta += len(x)
            if delta < 0:
                for n, frame, parent in moves:
                    _move(n, frame, parent, chosen, options, lexicon, usage, members)
                moved = True
    return moved


def _move(n: int, frame: Frame, target: Frame, chosen: list[Frame | None],
          options: Sequence[dict[Frame, tuple[Words, Words, int]]], lexicon: Counter[Words],
          usage: Counter[Frame], members: dict[Frame, list[int]]) -> None:
    for x in options[n][frame][:2]:
        lexicon[x] -= 1
    for x in options[n][target][:2]:
        lexicon[x] += 1
    usage[frame] -= 1
    usage[target] += 1
    members[target].append(n)
    chosen[n] = target


def _group_move(frame: Frame, group: Sequence[int], options: Sequence[dict[Frame, tuple[Words, Words, int]]],
                lexicon: Counter[Words], usage: Counter[Frame]) -> list[tuple[int, Frame]] | None:
    """The moves of ``frame``'s sentences to other frames when they shorten the description, else None."""
    change: Counter[Words] = Counter()
    for n in group:
        subject, obj, _ = options[n][frame]
        change[subject] -= 1
        change[obj] -= 1
    # the most the move can save: the frame's words and every entity string it alone uses
    saving = _size(frame) + sum(len(x) for x, d in change.items() if lexicon[x] + d <= 0)
    added = 0
    opened: set[Frame] = set()
    moves: list[tuple[int, Frame]] = []
    for n in group:
        best: tuple[tuple[int, int, int], Frame] | None = None
        for target, (subject, obj, support) in options[n].items():
            if target == frame:
                continue
            cost = 0 if usage[target] > 0 or target in opened else _size(target)
            cost += sum(len(x) for x in {subject, obj} if lexicon[x] + change[x] <= 0)
            rank = (cost, -_size(target), -support)
            if best is None or rank < best[0]:
                best = (rank, target)
        if best is None:
            return None
        target = best[1]
        if usage[target] == 0 and target not in opened:
            added += _size(target)
            opened.add(target)
        subject, obj, _ = options[n][target]
        for x in (subject, obj):
            if lexicon[x] + change[x] <= 0:
                added += len(x)
            change[x] += 1
        if added >= saving:
            return None
        moves.append((n, target))
    delta = -_size(frame) + sum(_size(t) for t in opened)
    for x, d in change.items():
        before, after = lexicon[x], lexicon[x] + d
        if before > 0 and after <= 0:
            delta -= len(x)
        elif before <= 0 and after > 0:
            delta += len(x)
    return moves if delta < 0 else None


__all__ = ["InducedFact", "canonical_facts", "canonical_frame", "induce_facts", "merge_synonymous"]

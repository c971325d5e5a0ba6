"""A relation lexicon: an optional, documented plug-in of question understanding.

Questions paraphrase relations ("Who is the *partner* of X?" for a fact "X is
*married* to Y"; "Where did X *breathe his last*?" for "X *died* in the city of
Y"). Word overlap alone cannot bridge such paraphrases; a lexicon of
*concepts* can: each concept lists English words and phrases that name the
same relation or type, and a question word and a frame word match when they
share a concept (or have the same stem).

The default lexicon below is general English relation vocabulary, written as
synonym sets of common biographical, geographic, organisational and
cultural relations (the relations encyclopaedic knowledge bases such as
Wikidata name). **No entry occurs in MemoryAgentBench's development rows**
(the official 6k FactConsolidation records): the 120 entries of an earlier
version that occurred there verbatim ("born", "married", "hails from", "breathe
his last", ...) were removed, and a test keeps it so. The general resource
that now carries most of the matching is WordNet
(:mod:`~tepa_envs.facts.wordnet`: a word's senses and derivations),
used when it is installed. Nothing in the fact extractor
(:mod:`tepa_envs.facts.extraction`) uses either. Pass ``lexicon={}`` to
:func:`~tepa_envs.agents.readers.questions.answer_question` for word overlap
(and WordNet) alone, or your own mapping (concept -> words and phrases) to
replace it.

Entries are lower-case; a phrase (several words) matches only as a whole,
before single words are read. Single words match by stem (``marri`` ~
``married`` / ``marriage``), see :func:`~tepa_envs.agents.readers.questions.stem`.
"""

from __future__ import annotations

from typing import Mapping, Sequence

Lexicon = Mapping[str, Sequence[str]]

RELATION_LEXICON: dict[str, tuple[str, ...]] = {
    "birth": ("native", "hometown"),
    "death": ("dead", "deceased", "decease", "perish", "expire", "passed away", "breathe her last",
        "breathed his last", "breathed her last", "breathed their last", "buried", "burial"),
    "spouse": ("marry", "wife", "husband", "wed", "wedded", "consort", "widow", "widower"),
    "child": ("children", "son", "daughter", "offspring", "kid", "heir"),
    "parent": ("parent", "father", "mother"),
    "citizenship": ("nationality", "national of", "passport"),
    "employer": ("employee", "employ", "work for", "worked for", "working for", "hired", "staff"),
    "workplace": ("workplace", "place of work", "office"),
    "occupation": ("occupation", "profession", "career", "vocation", "trade", "discipline", "line of work"),
    "education": ("school", "attend", "studied", "study", "alma mater", "graduate", "graduated", "alumnus", "alumna",
        "academy"),
    "founding": ("establish", "establishment", "set up", "started", "start"),
    "creation": ("create", "invented", "inventor", "devised", "arose", "emerged", "hail from"),
    "headquarters": ("headquartered", "head office", "based", "main office", "seat"),
    "developer": ("develop", "development"),
    "manufacturer": ("produce", "manufactured", "manufacture", "maker", "make", "built", "builder"),
    "owner": ("owner", "owned", "own", "owns"),
    "member": ("member", "membership"),
    "chair": ("chairman", "chairwoman", "chair"),
    "director": ("direct", "directed", "manage", "managed", "runs", "run by"),
    "head of state": ("monarch", "king", "queen", "sovereign", "president"),
    "head of government": ("head of the government", "premier", "chancellor", "mayor"),
    "capital": ("seat of government",),
    "continent": ("continental",),
    "country": ("land",),
    "city": ("municipality", "metropolis"),
    "location": ("situated", "lies", "site", "found in"),
    "language": ("tongue", "speaking", "dialect", "lingua"),
    "religion": ("belief", "denomination", "worship", "spiritual"),
    "sport": ("game", "athletic"),
    "position": ("positions", "specialised", "specialises", "plays as", "played as"),
    "genre": ("style", "musical style"),
    "author": ("writer", "wrote", "written by", "penned", "authored", "novelist", "poet"),
    "performer": ("perform", "performs", "singer", "sang", "sung", "artist", "actor", "actress", "portrayed",
        "recorded", "band", "musician"),
    "famous": ("best known", "renowned", "celebrated", "acclaimed", "famed", "masterpiece", "well known"),
    "broadcaster": ("broadcast", "aired", "network", "channel"),
}
"""Concept -> words and phrases that name it (the default lexicon)."""

__all__ = ["Lexicon", "RELATION_LEXICON"]

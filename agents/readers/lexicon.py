"""A relation lexicon: an optional, documented plug-in of question understanding.

Questions paraphrase relations ("Who is the *partner* of X?" for a fact "X is
*married* to Y"; "Where did X *breathe his last*?" for "X *died* in the city of
Y"). Word overlap alone cannot bridge such paraphrases; a lexicon of
*concepts* can: each concept lists English words and phrases that name the
same relation or type, and a question word and a frame word match when they
share a concept (or have the same stem).

The default lexicon below is general English relation vocabulary, the kind
of knowledge a language model brings to a question. It was written as
synonym sets of common biographical, geographic, organisational and
cultural relations (the relations encyclopaedic knowledge bases such as
Wikidata name: birth, death, spouse, citizenship, employer, education,
founding, headquarters, capital, language, religion, authorship, performance,
manufacture, leadership, ...), never as a list of one record's sentence
forms or questions. Nothing in the fact extractor
(:mod:`tepa_envs.facts.extraction`) uses it. Pass ``lexicon={}`` to
:func:`~tepa_envs.agents.readers.questions.answer_question` for word overlap alone,
or your own mapping (concept -> words and phrases) to replace it; the tests
measure question understanding with and without it, on held-out paraphrases
written for the tests.

Entries are lower-case; a phrase (several words) matches only as a whole,
before single words are read. Single words match by stem (``marri`` ~
``married`` / ``marriage``), see :func:`~tepa_envs.agents.readers.questions.stem`.
"""

from __future__ import annotations

from typing import Mapping, Sequence

Lexicon = Mapping[str, Sequence[str]]

RELATION_LEXICON: dict[str, tuple[str, ...]] = {
    # people
    "birth": ("born", "birth", "birthplace", "native", "place of birth", "hometown"),
    "death": ("died", "die", "death", "dead", "deceased", "decease", "perish", "expire", "pass away",
              "passed away", "breathe his last", "breathe her last", "breathe their last", "breathed his last",
              "breathed her last", "breathed their last", "last breath", "place of death", "buried", "burial"),
    "spouse": ("spouse", "married", "marry", "marriage", "wife", "husband", "partner", "wed", "wedded",
               "consort", "widow", "widower"),
    "child": ("child", "children", "son", "daughter", "offspring", "kid", "heir"),
    "parent": ("parent", "father", "mother"),
    "citizenship": ("citizen", "citizenship", "nationality", "national of", "passport", "hold citizenship"),
    "employer": ("employed", "employer", "employee", "employ", "employs", "works for", "work for", "worked for",
                 "working for", "hired", "staff"),
    "workplace": ("worked in", "work in", "works in", "work location", "workplace", "place of work",
                  "location of work", "office"),
    "occupation": ("field", "occupation", "profession", "professional", "career", "vocation", "job",
                   "trade", "discipline", "line of work"),
    "education": ("educated", "education", "educational", "university", "college", "school", "attend",
                  "attended", "studied", "study", "alma mater", "graduate", "graduated", "alumnus", "alumna",
                  "institution", "academy"),
    # organisations and things
    "founding": ("founded", "founder", "found", "founding", "establish", "established", "establishment",
                 "set up", "started", "start"),
    "creation": ("created", "creator", "create", "creation", "invented", "inventor", "devised", "originate",
                 "originated", "origin", "originally", "came from", "come from", "comes from", "arose",
                 "emerged", "hails from", "hail from"),
    "headquarters": ("headquarters", "headquartered", "head office", "based", "main office", "seat"),
    "developer": ("developed", "developer", "develop", "development"),
    "manufacturer": ("produced", "producer", "produce", "manufacturer", "manufactured", "manufacture", "maker",
                     "made", "make", "built", "builder"),
    "owner": ("owner", "owned", "own", "owns", "belongs to"),
    "member": ("member", "membership", "part of"),
    # leadership
    "ceo": ("chief executive officer", "chief executive", "ceo", "executive"),
    "chair": ("chairperson", "chairman", "chairwoman", "chair"),
    "director": ("director", "manager", "direct", "directed", "manage", "managed", "runs", "run by"),
    "head of state": ("head of state", "chief of state", "monarch", "king", "queen", "sovereign", "president"),
    "head of government": ("head of government", "head of the government", "prime minister", "premier",
                           "chancellor", "mayor", "government"),
    # places and languages
    "capital": ("capital", "capital city", "seat of government"),
    "continent": ("continent", "continental"),
    "country": ("country", "nation", "state", "land"),
    "city": ("city", "town", "municipality", "metropolis"),
    "location": ("located", "location", "situated", "lies", "where", "place", "site", "found in"),
    "language": ("language", "languages", "tongue", "speak", "speaks", "spoken", "speaking", "dialect",
                 "lingua"),
    "official": ("official", "officially"),
    # culture
    "religion": ("religion", "religious", "faith", "belief", "denomination", "church", "worship", "spiritual"),
    "sport": ("sport", "sports", "game", "athletic"),
    "position": ("position", "positions", "specialty", "specialised", "specialized", "specializes",
                 "specialises", "plays as", "played as"),
    "genre": ("genre", "style", "type of music", "kind of music", "musical style", "music"),
    "author": ("author", "writer", "wrote", "written by", "write", "penned", "authored", "novelist", "poet"),
    "performer": ("performer", "performed", "perform", "performs", "singer", "sang", "sung", "artist",
                  "actor", "actress", "portrayed", "played by", "recorded", "band", "musician"),
    "famous": ("famous", "known for", "best known", "notable", "renowned", "celebrated", "acclaimed",
               "famed", "significant", "masterpiece", "notable work", "well known"),
    "broadcaster": ("broadcaster", "broadcast", "aired", "network", "channel"),
}
"""Concept -> words and phrases that name it (the default lexicon)."""

__all__ = ["Lexicon", "RELATION_LEXICON"]

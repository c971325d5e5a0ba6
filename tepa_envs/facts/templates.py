"""The general template pool of the shaped generator (:mod:`tepa_envs.facts.shaped`).

Source and rationale. The relations are Wikidata properties (the inventory
MQuAKE, and so MemoryAgentBench's FactConsolidation, draws its facts from),
each named by its property id and English label and typed by the kinds of
entity it joins; the relation *noun* is the property's label or a common
English alias of it ("writer" for P50 *author*, "chair" for P488
*chairperson*). Every relation is stated in the general surface forms of
English, built by fixed schemas from the noun:

* ``genitive``: "The N of X is Y.",
* ``possessive``: "X's N is Y.",
* ``object first``: "Y is the N of X.",

plus, where the property has a common verb, its subject-first verbal forms
(active "X works for Y.", passive "X was written by Y."), written here per
relation. Questions follow the same schemas: "Who/What is the N of X?",
"Who/What is X's N?", "Which <kind> is the N of X?" (unless the noun names
the kind), plus a question with the
relation's verb ("Where was X born?"); multi-hop questions nest noun phrases
("the N of X", or a relative clause with the verb) inside a last hop's
question. No form was copied from MemoryAgentBench's rows:
``tests/facts/test_shaped.py`` extracts the sentence and question templates of
the official 6k rows (their entities replaced by slots) and checks that none
of them is a form of this pool or a question it generates; where a schema
would have given one of them, the relation is named by an alias instead (the
label *capital* gives the official row's "The capital of X is Y.", so the
noun is "capital city").

Every relation is equally likely (no frequency is taken from the rows).
Entity names follow several general patterns per kind (:data:`NAME_PATTERNS`).

Nothing here is read by the fact extractor (:mod:`tepa_envs.facts.extraction`)
or by the reader's question understanding: they know no sentence form.
"""

from __future__ import annotations

from dataclasses import dataclass

FACT_SCHEMAS: dict[str, str] = {
    "genitive": "The {n} of {{s}} is {{o}}.",
    "possessive": "{{s}}'s {n} is {{o}}.",
    "object first": "{{o}} is the {n} of {{s}}.",
}
"""Fact forms every relation has, from its noun ``{n}`` (``{s}`` subject, ``{o}`` object)."""

KIND_WORDS: dict[str, str] = {
    "person": "person", "country": "country", "city": "city", "organization": "organization",
    "university": "university", "work": "work", "product": "product", "language": "language",
    "religion": "religion", "sport": "sport", "continent": "continent", "currency": "currency",
    "field": "field", "genre": "genre", "party": "party",
}
"""The noun asking for an entity of each kind ("Which city ...")."""


@dataclass(frozen=True, slots=True)
class ShapedRelation:
    """One relation of the pool: its Wikidata property, typed slots, noun and verbal forms.

    ``verbs`` are subject-first verbal fact forms (``{s}``, ``{o}``), ``asks`` verbal
    single-hop questions (``{s}``) and ``clauses`` noun phrases with the verb (``{s}``).
    The derived tuples hold every form: :attr:`facts` (schema forms, then verbal),
    :attr:`questions` (single hop, ``{s}``), :attr:`phrases` (an inner hop of a multi-hop
    question, ``{s}``) and :attr:`finals` (a last hop, ``{x}`` the noun phrase before).
    """

    pid: str
    label: str
    subject: str
    object: str
    noun: str
    verbs: tuple[str, ...] = ()
    asks: tuple[str, ...] = ()
    clauses: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.pid} {self.label} ({self.subject})"

    @property
    def facts(self) -> tuple[str, ...]:
        return tuple(f.format(n=self.noun) for f in FACT_SCHEMAS.values()) + self.verbs

    @property
    def questions(self) -> tuple[str, ...]:
        wh = "Who" if self.object == "person" else "What"
        kind = KIND_WORDS[self.object]
        typed = () if kind in self.noun.split() else (f"Which {kind} is the {self.noun} of {{s}}?",)
        return (f"{wh} is the {self.noun} of {{s}}?", f"{wh} is {{s}}'s {self.noun}?") + typed + self.asks

    @property
    def phrases(self) -> tuple[str, ...]:
        return (f"the {self.noun} of {{s}}",) + self.clauses

    @property
    def finals(self) -> tuple[str, ...]:
        """Last-hop questions: every single-hop question except the possessive one (a
        possessive of a nested phrase, "the N of X's M", reads two ways)."""
        return tuple(q.replace("{s}", "{x}") for q in self.questions if "{s}'s" not in q)


_R = ShapedRelation
SHAPED_RELATIONS: tuple[ShapedRelation, ...] = (
    # people
    _R("P26", "spouse", "person", "person", "spouse", ("{s} is wed to {o}.",), ("Whom did {s} marry?",),
       ("the person whom {s} married",)),
    _R("P27", "country of citizenship", "person", "country", "nationality", ("{s} holds citizenship of {o}.",),
       ("Which country does {s} hold citizenship of?",), ("the country of which {s} is a national",)),
    _R("P19", "place of birth", "person", "city", "birthplace", ("{s} was born in {o}.",), ("Where was {s} born?",),
       ("the city where {s} was born",)),
    _R("P20", "place of death", "person", "city", "place of death", ("{s} died in {o}.",), ("Where did {s} die?",),
       ("the city where {s} died",)),
    _R("P551", "residence", "person", "city", "residence", ("{s} lives in {o}.",), ("Where does {s} live?",),
       ("the city where {s} lives",)),
    _R("P937", "work location", "person", "city", "work location", ("{s} was based in {o}.",),
       ("In which city was {s} based?",), ("the city where {s} was based",)),
    _R("P108", "employer", "person", "organization", "employer", ("{s} works for {o}.",),
       ("Which organization does {s} work for?",), ("the organization that {s} works for",)),
    _R("P69", "educated at", "person", "university", "alma mater", ("{s} graduated from {o}.",),
       ("Where did {s} study?",), ("the university from which {s} graduated",)),
    _R("P140", "religion or worldview", "person", "religion", "religion", ("{s} practises {o}.",),
       ("Which faith does {s} practise?",), ("the faith that {s} practises",)),
    _R("P103", "native language", "person", "language", "native language", (),
       ("Which language did {s} learn first?",), ("the first language of {s}",)),
    _R("P101", "field of work", "person", "field", "field of work", ("{s} specialises in {o}.",),
       ("What does {s} specialise in?",), ("the field in which {s} specialises",)),
    _R("P22", "father", "person", "person", "father", (), ("Who fathered {s}?",)),
    _R("P25", "mother", "person", "person", "mother"),
    _R("P800", "notable work", "person", "work", "best-known work", ("{s} is best known for {o}.",),
       ("What is {s} best known for?",), ("the work for which {s} is best known",)),
    _R("P641", "sport", "person", "sport", "sport", ("{s} competes in {o}.",),
       ("Which sport does {s} compete in?",), ("the sport in which {s} competes",)),
    _R("P102", "member of political party", "person", "party", "political party", ("{s} is a member of {o}.",),
       ("Which party does {s} belong to?",), ("the party to which {s} belongs",)),
    # countries and cities
    _R("P36", "capital", "country", "city", "capital city", ("{s} is governed from {o}.",),
       ("Which city is {s} governed from?",), ("the city from which {s} is governed",)),
    _R("P35", "head of state", "country", "person", "head of state", (),
       ("Who serves as head of state of {s}?",)),
    _R("P6", "head of government", "country", "person", "head of government", (),
       ("Who heads the government of {s}?",), ("the person heading the government of {s}",)),
    _R("P30", "continent", "country", "continent", "continent", ("{s} lies in {o}.",),
       ("On which continent does {s} lie?",)),
    _R("P38", "currency", "country", "currency", "currency", (), ("Which currency does {s} use?",),
       ("the currency used in {s}",)),
    _R("P17", "country", "city", "country", "country", ("{s} is a city in {o}.",), ("In which country is {s}?",),
       ("the country in which {s} lies",)),
    _R("P6", "head of government", "city", "person", "mayor", ("{s} is governed by {o}.",),
       ("Who governs {s}?",)),
    # organizations and universities
    _R("P112", "founded by", "organization", "person", "founder", ("{s} was established by {o}.",),
       ("Who established {s}?",), ("the person who established {s}",)),
    _R("P159", "headquarters location", "organization", "city", "headquarters location",
       ("{s} is headquartered in {o}.",), ("Where is {s} headquartered?",), ("the city where {s} is headquartered",)),
    _R("P169", "chief executive officer", "organization", "person", "chief executive", ("{s} is run by {o}.",),
       ("Who runs {s}?",), ("the person who runs {s}",)),
    _R("P488", "chairperson", "organization", "person", "chair", ("{s} is chaired by {o}.",), ("Who chairs {s}?",)),
    _R("P749", "parent organization", "organization", "organization", "parent organization",
       ("{s} is a subsidiary of {o}.",), ("Which organization owns {s}?",), ("the organization that owns {s}",)),
    _R("P740", "location of formation", "organization", "city", "place of formation", ("{s} was formed in {o}.",),
       ("In which city was {s} formed?",)),
    _R("P131", "located in the administrative territorial entity", "university", "city", "location",
       ("{s} is located in {o}.",), ("Where is {s} located?",), ("the city where {s} is located",)),
    _R("P1037", "director / manager", "university", "person", "president", ("{s} is headed by {o}.",),
       ("Who heads {s}?",)),
    # works and products
    _R("P50", "author", "work", "person", "writer", ("{s} was written by {o}.",), ("Who wrote {s}?",),
       ("the person who wrote {s}",)),
    _R("P123", "publisher", "work", "organization", "publisher", ("{s} was published by {o}.",),
       ("Who published {s}?",)),
    _R("P407", "language of work or name", "work", "language", "original language",
       ("{s} was first published in {o}.",), ("In which language was {s} first published?",)),
    _R("P495", "country of origin", "work", "country", "country of origin", ("{s} comes from {o}.",),
       ("Which country does {s} come from?",)),
    _R("P136", "genre", "work", "genre", "genre", (), ("Which genre is {s}?",)),
    _R("P175", "performer", "work", "person", "performer", ("{s} was recorded by {o}.",), ("Who recorded {s}?",),
       ("the person who recorded {s}",)),
    _R("P176", "manufacturer", "product", "organization", "manufacturer", ("{s} is made by {o}.",),
       ("Who makes {s}?",), ("the company that makes {s}",)),
    _R("P178", "developer", "product", "organization", "developer", ("{s} was designed by {o}.",),
       ("Which organization designed {s}?",)),
    # sports, religions, parties
    _R("P495", "country of origin", "sport", "country", "country of origin", ("{s} originated in {o}.",),
       ("Where did {s} originate?",)),
    _R("P112", "founded by", "religion", "person", "founder", ("{s} was established by {o}.",),
       ("Who established {s}?",)),
    _R("P488", "chairperson", "party", "person", "leader", ("{s} is led by {o}.",), ("Who leads {s}?",)),
    _R("P159", "headquarters location", "party", "city", "headquarters location", ("{s} is headquartered in {o}.",),
       ("Where is {s} headquartered?",)),
)

# Name patterns per entity kind ({S}: a unique stem, {s} in lower case; {G}/{H}: given
# names, {I} an initial, {T} another word, {N} a number), each with its share.
NAME_PATTERNS: dict[str, tuple[tuple[str, float], ...]] = {
    "person": (("{G} {S}", 0.6), ("{G} {H} {S}", 0.25), ("{G} {I}. {S}", 0.15)),
    "country": (("{S}", 0.5), ("{S}ia", 0.2), ("Republic of {S}", 0.15), ("{S} Federation", 0.15)),
    "city": (("{S}", 0.6), ("Port {S}", 0.15), ("{S}ton", 0.15), ("{S} City", 0.1)),
    "organization": (("{S}", 0.3), ("{S} Corporation", 0.2), ("{S} Group", 0.2), ("{S} Foundation", 0.15),
                     ("{S} Ltd", 0.15)),
    "university": (("University of {S}", 0.4), ("{S} University", 0.3), ("{S} College", 0.3)),
    "work": (("{S}", 0.35), ("The {S}", 0.25), ("{S} of {T}", 0.2), ("The {S} Letters", 0.2)),
    "product": (("{S}", 0.5), ("{S} {N}", 0.3), ("{S} One", 0.2)),
    "language": (("{S}", 0.4), ("{S}ish", 0.3), ("{S}ese", 0.3)),
    "religion": (("{s}ism", 0.6), ("{S} Church", 0.4)),
    "sport": (("{s}", 0.5), ("{s}ball", 0.3), ("{s} racing", 0.2)),
    "continent": (("{S}", 0.5), ("{S}a", 0.5)),
    "currency": (("{s}", 0.4), ("{S} dollar", 0.3), ("{S} mark", 0.3)),
    "field": (("{s}ology", 0.4), ("{s}ics", 0.3), ("{s}", 0.3)),
    "genre": (("{s}", 0.4), ("{s} rock", 0.3), ("{s} jazz", 0.3)),
    "party": (("{S} Party", 0.5), ("Party of {S}", 0.25), ("{S} Union", 0.25)),
}

__all__ = ["FACT_SCHEMAS", "KIND_WORDS", "NAME_PATTERNS", "SHAPED_RELATIONS", "ShapedRelation"]

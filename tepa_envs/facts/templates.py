"""Sentence and question forms of the MemoryAgentBench-shaped generator (:mod:`tepa_envs.facts.shaped`).

The fact forms are those of MemoryAgentBench's FactConsolidation rows (MQuAKE
relations, the official rows' misspelling "univeristy" included), with weights
proportional to how often each form occurs in the official 6k rows. Questions
are paraphrased as people ask them: single-hop forms per relation, and
multi-hop questions built from a final question around nested noun phrases
("Which city did the partner of X die in?"), each drawn from several
paraphrases.

Nothing here is read by the fact extractor (:mod:`tepa_envs.facts.extraction`)
or by the reader's question understanding: they know no sentence form.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ShapedRelation:
    """One relation: typed slots, its fact form, its weight, and its paraphrases.

    ``questions`` are single-hop questions (``{s}`` the subject); ``phrases`` are
    noun phrases for an inner hop of a multi-hop question; ``finals`` are the
    questions of a last hop (``{x}``: the noun phrase of the hops before).
    """

    name: str
    subject: str
    object: str
    weight: int
    fact: str
    questions: tuple[str, ...]
    phrases: tuple[str, ...]
    finals: tuple[str, ...]


def _r(name: str, subject: str, obj: str, weight: int, fact: str, questions: tuple[str, ...],
       phrases: tuple[str, ...], finals: tuple[str, ...] | None = None) -> ShapedRelation:
    return ShapedRelation(name, subject, obj, weight, fact, questions, phrases,
                          finals if finals is not None else tuple(q.replace("{s}", "{x}") for q in questions))


SHAPED_RELATIONS: tuple[ShapedRelation, ...] = (
    _r("citizen_of", "person", "country", 47, "{s} is a citizen of {o}.",
       ("What is the country of citizenship of {s}?", "Which country is {s} a citizen of?"),
       ("the country of citizenship of {s}", "the country whose citizenship {s} holds")),
    _r("sport", "athlete", "sport", 34, "{s} is associated with the sport of {o}.",
       ("Which sport is {s} associated with?", "What sport does {s} play?"),
       ("the sport associated with {s}", "the sport played by {s}")),
    _r("position_sport", "position", "sport", 12, "{s} is associated with the sport of {o}.",
       ("Which sport is {s} associated with?", "In which sport is {s} a position?"),
       ("the sport in which {s} is a position", "the sport of the position {s}")),
    _r("sport_origin", "sport", "country", 26, "{s} was created in the country of {o}.",
       ("Which country was {s} created in?", "Where does {s} originate from?"),
       ("the country where {s} was created", "the country of origin of {s}")),
    _r("capital", "country", "city", 24, "The capital of {s} is {o}.",
       ("What is the capital of {s}?", "Which city is the capital of {s}?"),
       ("the capital of {s}", "the capital city of {s}")),
    _r("spouse", "person", "person", 23, "{s} is married to {o}.",
       ("Who is {s} married to?", "Who is the spouse of {s}?"),
       ("the spouse of {s}", "the partner of {s}", "the person married to {s}")),
    _r("died_in", "person", "city", 22, "{s} died in the city of {o}.",
       ("Which city did {s} die in?", "Where did {s} pass away?"),
       ("the place of death of {s}", "the city where {s} died")),
    _r("continent", "country", "continent", 20, "{s} is located in the continent of {o}.",
       ("Which continent is {s} located in?", "On which continent is {s}?"),
       ("the continent of {s}", "the continent where {s} is located")),
    _r("founder", "organization", "person", 20, "{s} was founded by {o}.",
       ("Who founded {s}?", "Who is the founder of {s}?"),
       ("the founder of {s}", "the person who founded {s}")),
    _r("author", "work", "person", 19, "The author of {s} is {o}.",
       ("Who is the author of {s}?", "Who wrote {s}?"),
       ("the author of {s}", "the writer of {s}")),
    _r("religion", "person", "religion", 18, "{s} is affiliated with the religion of {o}.",
       ("Which religion is {s} affiliated with?", "What is the religion of {s}?"),
       ("the religion of {s}", "the faith {s} follows")),
    _r("performer", "work", "person", 17, "{s} was performed by {o}.",
       ("Who performed {s}?", "Who is the performer of {s}?"),
       ("the performer of {s}", "the artist who performed {s}")),
    _r("educated", "person", "university", 13, "The univeristy where {s} was educated is {o}.",
       ("Which university was {s} educated at?", "Where did {s} study?"),
       ("the university where {s} was educated", "the alma mater of {s}")),
    _r("position", "athlete", "position", 12, "{s} plays the position of {o}.",
       ("What position does {s} play?", "Which position does {s} play on the team?"),
       ("the position played by {s}", "the position of {s}")),
    _r("ceo", "organization", "person", 12, "The chief executive officer of {s} is {o}.",
       ("Who is the chief executive officer of {s}?", "Who is the CEO of {s}?"),
       ("the chief executive officer of {s}", "the CEO of {s}")),
    _r("headquarters", "organization", "city", 10, "The headquarters of {s} is located in the city of {o}.",
       ("Where is the headquarters of {s} located?", "In which city is the headquarters of {s}?"),
       ("the headquarters location of {s}", "the city where {s} has its headquarters")),
    _r("famous_for", "person", "work", 10, "{s} is famous for {o}.",
       ("What is {s} famous for?", "What is {s} best known for?"),
       ("the work {s} is famous for", "the best-known work of {s}")),
    _r("official_language", "country", "language", 10, "The official language of {s} is {o}.",
       ("What is the official language of {s}?", "Which language is official in {s}?"),
       ("the official language of {s}",)),
    _r("director", "organization", "person", 9, "The director of {s} is {o}.",
       ("Who is the director of {s}?", "Who manages {s}?"),
       ("the director of {s}", "the manager of {s}")),
    _r("speaks", "person", "language", 9, "{s} speaks the language of {o}.",
       ("Which language does {s} speak?", "What language is spoken by {s}?"),
       ("the language spoken by {s}",)),
    _r("founded_in", "organization", "city", 8, "{s} was founded in the city of {o}.",
       ("In which city was {s} founded?", "Where was {s} established?"),
       ("the city where {s} was founded",)),
    _r("genre", "person", "genre", 8, "The type of music that {s} plays is {o}.",
       ("What type of music does {s} play?", "Which genre does {s} play?"),
       ("the genre of {s}", "the type of music {s} plays")),
    _r("born_in", "person", "city", 7, "{s} was born in the city of {o}.",
       ("Which city was {s} born in?", "Where was {s} born?"),
       ("the birthplace of {s}", "the city where {s} was born")),
    _r("head_of_government", "country", "person", 7, "The name of the current head of the {s} government is {o}.",
       ("Who is the head of the government of {s}?", "Who leads the government of {s}?"),
       ("the head of government of {s}",)),
    _r("chairperson", "organization", "person", 6, "The chairperson of {s} is {o}.",
       ("Who is the chairperson of {s}?", "Who chairs {s}?"),
       ("the chairperson of {s}",)),
    _r("employer", "person", "organization", 6, "{s} is employed by {o}.",
       ("Who is {s} employed by?", "Which organization employs {s}?"),
       ("the employer of {s}", "the organization that employs {s}")),
    _r("head_of_state", "country", "person", 6, "The name of the current head of state in {s} is {o}.",
       ("Who is the head of state of {s}?", "Who is the current head of state in {s}?"),
       ("the head of state of {s}",)),
    _r("field", "person", "field", 6, "{s} works in the field of {o}.",
       ("Which field does {s} work in?", "What is the occupation of {s}?"),
       ("the field of work of {s}",)),
    _r("developer", "product", "organization", 6, "{s} was developed by {o}.",
       ("Who developed {s}?", "Which company is the developer of {s}?"),
       ("the developer of {s}",)),
    _r("worked_in", "person", "city", 5, "{s} worked in the city of {o}.",
       ("Which city did {s} work in?", "Where did {s} work?"),
       ("the city where {s} worked", "the work location of {s}")),
    _r("child", "person", "person", 5, "{s}'s child is {o}.",
       ("Who is the child of {s}?", "Who is {s}'s child?"),
       ("the child of {s}",)),
    _r("manufacturer", "product", "organization", 5, "The company that produced {s} is {o}.",
       ("Which company produced {s}?", "Who is the manufacturer of {s}?"),
       ("the manufacturer of {s}", "the company that produced {s}")),
    _r("written_in", "work", "language", 5, "{s} was written in the language of {o}.",
       ("Which language was {s} written in?", "In what language is {s} written?"),
       ("the language {s} was written in",)),
    _r("creator", "character", "person", 4, "{s} was created by {o}.",
       ("Who created {s}?", "Who is the creator of {s}?"),
       ("the creator of {s}",)),
)

# Name patterns per entity type ({S}: a unique stem; {G}/{H}: given names; {s}: the
# stem in lower case), each with its share. No pattern covers most names of a type,
# as in real data.
NAME_PATTERNS: dict[str, tuple[tuple[str, float], ...]] = {
    "person": (("{G} {S}", 0.6), ("{G} {H} {S}", 0.25), ("{G} {I}. {S}", 0.15)),
    "athlete": (("{G} {S}", 0.55), ("{S} FC", 0.15), ("{S} national football team", 0.1), ("{G} {H} {S}", 0.2)),
    "character": (("{G} {S}", 0.7), ("{S}", 0.3)),
    "country": (("{S}", 0.6), ("{S}ia", 0.2), ("Republic of {S}", 0.1), ("{S} Empire", 0.1)),
    "city": (("{S}", 0.7), ("Port {S}", 0.1), ("{S}burg", 0.1), ("{S} City", 0.1)),
    "continent": (("{S}", 1.0),),
    "sport": (("{s}", 0.5), ("{s} ball", 0.25), ("{s} union", 0.25)),
    "position": (("{s}", 0.5), ("{s} back", 0.25), ("wide {s}", 0.25)),
    "genre": (("{s}", 0.4), ("{s} rock", 0.3), ("{s} pop", 0.3)),
    "field": (("{s}", 0.5), ("{s}ist", 0.5)),
    "organization": (("{S}", 0.3), ("{S} Inc.", 0.2), ("{S} Corporation", 0.2), ("University of {S}", 0.15),
                     ("{S} Group", 0.15)),
    "university": (("University of {S}", 0.35), ("{S} University", 0.3), ("{S} College", 0.2), ("{S} Institute", 0.15)),
    "religion": (("{S}ism", 0.5), ("{S} Church", 0.25), ("Church of {S}", 0.25)),
    "language": (("{S}", 0.4), ("{S}ish", 0.3), ("{S}ese", 0.3)),
    "work": (("{S}", 0.35), ("The {S}", 0.25), ("{S} of {T}", 0.2), ("Songs of {S}", 0.2)),
    "product": (("{S}", 0.5), ("{S} {N}", 0.3), ("{S}OS", 0.2)),
}

__all__ = ["NAME_PATTERNS", "SHAPED_RELATIONS", "ShapedRelation"]

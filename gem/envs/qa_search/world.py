"""A fictional world for search QA: invented people, towns and companies, generated from a seed.

Nothing here exists, so a model cannot answer from memory; it must search the corpus (one document
per entity) and often chain documents: "Which river flows through the town where the founder of
Quorvex Lumen was born?" needs the company's page, then the founder's, then the town's.

The same seed and sizes always give the same world (all draws come from one ``random.Random``).
Documents state each fact in a fixed sentence (``FACT_PATTERNS``), and questions come from fixed
templates (``QUESTION_TEMPLATES``), so a scripted agent can read them back.

    python -m gem.envs.qa_search.world --out corpus.jsonl [--seed 0 --people 200 --towns 40 --companies 60]
"""

from __future__ import annotations

import argparse
import functools
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

_ONSETS = ("b", "br", "d", "dr", "f", "g", "gr", "k", "kr", "l", "m", "n", "p", "qu", "r", "s", "st", "t",
           "th", "tr", "v", "vr", "z", "zh", "sh", "h", "j", "c", "x", "y")
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ia", "ou", "ei", "y")
_CODAS = ("", "", "n", "r", "l", "s", "th", "x", "m", "nd", "rk", "ss", "v")
_TOWN_ENDINGS = ("ford", "holm", "wick", "mere", "stead", "vale", "haven", "burg", "port", "moor", "crest")
_COMPANY_WORDS = ("Dynamics", "Works", "Holdings", "Labs", "Foundry", "Systems", "Trading", "Mills",
                  "Collective", "Guild", "Industries", "Partners", "Logistics", "Textiles", "Forge")
PROFESSIONS = ("cartographer", "engineer", "botanist", "architect", "chemist", "sculptor", "navigator",
               "economist", "astronomer", "pharmacist", "geologist", "violinist", "surveyor", "linguist")
INDUSTRIES = ("shipbuilding", "textile", "glassmaking", "software", "mining", "publishing", "brewing",
              "aerospace", "pharmaceutical", "railway", "clockmaking", "fishing", "ceramics")

# One sentence per fact; the scripted agent reads facts back with FACT_PATTERNS.
PERSON_TEMPLATE = (
    "{name} is a {profession} born in {birth_year} in the town of {birthplace}. "
    "{name} works for {employer}. Colleagues describe {name} as meticulous."
)
TOWN_TEMPLATE = (
    "{name} is a town in the {region} region, founded in {founded}. "
    "The {river} River flows through {name}. {name} has a population of {population}."
)
COMPANY_TEMPLATE = (
    "{name} is a {industry} company founded in {founded} by {founder}. "
    "The headquarters of {name} are in {headquarters}."
)
FACT_PATTERNS: dict[str, str] = {
    "birth_year": r"born in (\d+) in the town of",
    "birthplace": r"in the town of (.+?)\. ",
    "employer": r"works for (.+?)\. ",
    "profession": r"is an? (\w+) born in",
    "region": r"is a town in the (.+?) region",
    "founded": r"founded in (\d+)",
    "river": r"The (.+?) River flows through",
    "population": r"has a population of (\d+)",
    "founder": r"founded in \d+ by (.+?)\. ",
    "headquarters": r"The headquarters of .+? are in (.+?)\.$",
    "industry": r"is an? (\w+) company founded",
}

# question kind -> (template with {start}, start entity kind, relation chain). Each relation but the
# last leads to another entity's document; the last one is the answer.
QUESTION_TEMPLATES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "birth_year": ("In what year was {start} born?", "person", ("birth_year",)),
    "company_founded": ("In what year was {start} founded?", "company", ("founded",)),
    "town_river": ("Which river flows through {start}?", "town", ("river",)),
    "employer_hq": ("In which town is the company that {start} works for headquartered?", "person",
                    ("employer", "headquarters")),
    "birthplace_river": ("Which river flows through the town where {start} was born?", "person",
                         ("birthplace", "river")),
    "founder_birthplace": ("In which town was the founder of {start} born?", "company",
                           ("founder", "birthplace")),
    "hq_founded": ("In what year was the town where {start} has its headquarters founded?", "company",
                   ("headquarters", "founded")),
    "employer_founder": ("Who founded the company that {start} works for?", "person", ("employer", "founder")),
    "founder_birthplace_region": ("In which region lies the town where the founder of {start} was born?",
                                  "company", ("founder", "birthplace", "region")),
    "employer_hq_river": ("Which river flows through the town where the company that employs {start} "
                          "has its headquarters?", "person", ("employer", "headquarters", "river")),
}


@dataclass(frozen=True)
class Person:
    name: str
    profession: str
    birth_year: int
    birthplace: str
    employer: str


@dataclass(frozen=True)
class Town:
    name: str
    region: str
    founded: int
    river: str
    population: int


@dataclass(frozen=True)
class Company:
    name: str
    industry: str
    founded: int
    founder: str
    headquarters: str


Entity = Union[Person, Town, Company]


def _word(rng: random.Random, syllables: int) -> str:
    parts = [rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables)]
    return ("".join(parts) + rng.choice(_CODAS)).capitalize()


def _unique(rng: random.Random, count: int, make: Any, taken: set[str]) -> list[str]:
    names: list[str] = []
    tries = 0
    while len(names) < count:
        name = make()
        tries += 1
        if tries > 50 * count + 1000:
            raise ValueError(f"could not invent {count} distinct names; ask for a smaller world")
        if name not in taken:
            taken.add(name)
            names.append(name)
    return names


class World:
    """The generated people, towns and companies, with lookups by name. Immutable once built."""

    def __init__(self, seed: int = 0, num_people: int = 200, num_towns: int = 40, num_companies: int = 60) -> None:
        for label, value, low in (("num_people", num_people, 2), ("num_towns", num_towns, 1),
                                  ("num_companies", num_companies, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{label} must be an integer >= {low}, got {value!r}.")
        self.seed, self.sizes = seed, (num_people, num_towns, num_companies)
        rng = random.Random(seed)
        taken: set[str] = set()
        regions = _unique(rng, max(3, num_towns // 8), lambda: _word(rng, 2) + "ia", taken)
        rivers = _unique(rng, max(3, num_towns // 2), lambda: _word(rng, 2), taken)
        town_names = _unique(rng, num_towns, lambda: _word(rng, rng.randint(1, 2)) + rng.choice(_TOWN_ENDINGS), taken)
        firsts = [_word(rng, rng.randint(1, 2)) for _ in range(max(40, int(num_people**0.5) * 3))]
        lasts = [_word(rng, rng.randint(2, 3)) for _ in range(max(40, int(num_people**0.5) * 3))]
        person_names = _unique(rng, num_people, lambda: f"{rng.choice(firsts)} {rng.choice(lasts)}", taken)
        company_names = _unique(
            rng, num_companies, lambda: f"{_word(rng, rng.randint(2, 3))} {rng.choice(_COMPANY_WORDS)}", taken
        )
        self.towns = tuple(
            Town(n, rng.choice(regions), rng.randint(1200, 1900), rng.choice(rivers), rng.randint(800, 900000))
            for n in town_names
        )
        # Founders are people; a company is founded after its founder turned twenty.
        birth_years = [rng.randint(1930, 2000) for _ in person_names]
        companies = []
        for name in company_names:
            founder = rng.randrange(num_people)
            companies.append(Company(name, rng.choice(INDUSTRIES), rng.randint(birth_years[founder] + 20, 2024),
                                     person_names[founder], rng.choice(town_names)))
        self.companies = tuple(companies)
        self.people = tuple(
            Person(n, rng.choice(PROFESSIONS), year, rng.choice(town_names), rng.choice(company_names))
            for n, year in zip(person_names, birth_years)
        )
        self.by_name: dict[str, Entity] = {e.name: e for e in (*self.people, *self.towns, *self.companies)}

    def __deepcopy__(self, memo: dict) -> "World":
        return self  # immutable: copies of an env share it

    def __len__(self) -> int:
        return len(self.by_name)

    # ----------------------------------------------------------------- documents
    def documents(self) -> list[dict[str, str]]:
        """One document per entity: ``{"id", "title", "text"}`` (people, then towns, then companies)."""
        docs = []
        for kind, entities, template in (("person", self.people, PERSON_TEMPLATE),
                                         ("town", self.towns, TOWN_TEMPLATE),
                                         ("company", self.companies, COMPANY_TEMPLATE)):
            for i, entity in enumerate(entities):
                docs.append({"id": f"{kind}-{i}", "title": entity.name, "text": template.format(**vars(entity))})
        return docs

    def write_corpus(self, path: Union[str, Path]) -> Path:
        """Write the documents as a JSONL corpus for ``build_index``/``retrieval_server``."""
        from gem.services.search.corpus import write_corpus

        write_corpus(self.documents(), path)
        return Path(path)

    # ----------------------------------------------------------------- questions
    def entities(self, kind: str) -> tuple[Entity, ...]:
        return {"person": self.people, "town": self.towns, "company": self.companies}[kind]

    def follow(self, start: str, relations: Sequence[str]) -> list[str]:
        """The names met along ``relations`` from ``start``; the last one is the answer."""
        path, current = [], self.by_name[start]
        for relation in relations:
            value = str(getattr(current, relation))
            path.append(value)
            current = self.by_name.get(value, current)
        return path

    def question(self, rng: random.Random, hops: Sequence[int] = (1, 2, 3)) -> dict[str, Any]:
        """A question with ``len(relations)`` in ``hops``, drawn from ``rng``.

        Returns ``question``, ``answer``, ``kind``, ``hops``, ``start`` and ``supporting_titles``
        (the documents an agent must read, in order).
        """
        kinds = [k for k, (_, _, rel) in QUESTION_TEMPLATES.items() if len(rel) in hops]
        if not kinds:
            raise ValueError(f"no question has {list(hops)} hops; choose hops from 1, 2, 3.")
        kind = rng.choice(kinds)
        template, start_kind, relations = QUESTION_TEMPLATES[kind]
        start = rng.choice(self.entities(start_kind)).name
        path = self.follow(start, relations)
        return {
            "question": template.format(start=start),
            "answer": path[-1],
            "kind": kind,
            "hops": len(relations),
            "start": start,
            "supporting_titles": [start, *path[:-1]],
        }


@functools.lru_cache(maxsize=8)
def get_world(seed: int = 0, num_people: int = 200, num_towns: int = 40, num_companies: int = 60) -> World:
    """The world for these parameters, built once per process."""
    return World(seed, num_people, num_towns, num_companies)


def parse_question(question: str) -> Optional[tuple[str, str, tuple[str, ...]]]:
    """``(kind, start entity, relations)`` for a question made from ``QUESTION_TEMPLATES``, else None."""
    # Longest templates first: "In what year was the town where X has ... founded?" must not be
    # read as "In what year was {start} founded?".
    for kind, (template, _, relations) in sorted(QUESTION_TEMPLATES.items(), key=lambda kv: -len(kv[1][0])):
        head, _, tail = template.partition("{start}")
        match = re.search(re.escape(head) + r"(.+?)" + re.escape(tail), question)
        if match:
            return kind, match.group(1), relations
    return None


def read_fact(text: str, relation: str) -> Optional[str]:
    """The value of ``relation`` stated in a document's text, or None."""
    match = re.search(FACT_PATTERNS[relation], text)
    return match.group(1) if match else None


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m gem.envs.qa_search.world", description="Write the fictional corpus.")
    parser.add_argument("--out", required=True, help="JSONL file to write")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--people", type=int, default=200)
    parser.add_argument("--towns", type=int, default=40)
    parser.add_argument("--companies", type=int, default=60)
    args = parser.parse_args(argv)
    world = World(args.seed, args.people, args.towns, args.companies)
    world.write_corpus(args.out)
    print(f"wrote {len(world)} documents to {args.out}")  # CLI output


if __name__ == "__main__":
    main()

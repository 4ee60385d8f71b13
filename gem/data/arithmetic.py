"""The bundled offline math sets: arithmetic and word problems with exact answers.

Item ``i`` comes from ``random.Random(seed + i)`` alone, so any item is reproducible on its own.
Answers are integers or reduced fractions (``\\frac{p}{q}``). Two levels are shipped, items 0..N-1
for seed 0 each:

- ``arithmetic`` (``gem/data/bundled/arithmetic.jsonl.gz``, ``math:Arithmetic``): expressions,
  fractions, linear equations, gcd/lcm and word problems;
- ``arithmetic-easy`` (``gem/data/bundled/arithmetic-easy.jsonl.gz``, ``math:Arithmetic-easy``):
  one-digit addition and subtraction (``Compute $7 - 3$.``, answers 0 to 18), a start a small
  model can learn from.

Both files are written by::

    python -m gem.data.arithmetic            # rewrites the bundled files
    python -m gem.data.arithmetic --check    # exits 1 if a file differs from the generator
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

BUNDLED_NAME = "arithmetic"
BUNDLED_SIZE = 5000
BUNDLED_SEED = 0
BUNDLED_FILE = Path(__file__).resolve().parent / "bundled" / f"{BUNDLED_NAME}.jsonl.gz"
EASY_NAME = "arithmetic-easy"
EASY_FILE = BUNDLED_FILE.with_name(f"{EASY_NAME}.jsonl.gz")

_NAMES = ("Ava", "Ben", "Chloe", "Diego", "Emma", "Farah", "Gus", "Hana", "Ivan", "Jia", "Kofi", "Lena")
_ITEMS = ("apples", "marbles", "stickers", "books", "pencils", "cookies", "stamps", "shells")


def format_answer(value: Fraction) -> str:
    """An integer as ``"12"``, anything else as ``"\\frac{p}{q}"`` (sign in front)."""
    if value.denominator == 1:
        return str(value.numerator)
    sign = "-" if value < 0 else ""
    return f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"


def _expression(rng: random.Random) -> tuple[str, Fraction, str]:
    a, b, c = rng.randint(2, 99), rng.randint(2, 30), rng.randint(2, 12)
    form = rng.randrange(4)
    if form == 0:
        return f"Compute ${a} + {b} \\times {c}$.", Fraction(a + b * c), "expression"
    if form == 1:
        return f"Compute $({a} - {b}) \\times {c}$.", Fraction((a - b) * c), "expression"
    if form == 2:
        q = rng.randint(2, 20)
        return f"Compute ${q * c} \\div {c} - {b}$.", Fraction(q - b), "expression"
    return f"Compute ${a} - {b} - {c} \\times {c}$.", Fraction(a - b - c * c), "expression"


def _fractions(rng: random.Random) -> tuple[str, Fraction, str]:
    p, q = rng.randint(1, 9), rng.randint(2, 12)
    r, s = rng.randint(1, 9), rng.randint(2, 12)
    op = rng.choice("+-")
    value = Fraction(p, q) + Fraction(r, s) if op == "+" else Fraction(p, q) - Fraction(r, s)
    return (
        f"Compute $\\frac{{{p}}}{{{q}}} {op} \\frac{{{r}}}{{{s}}}$ and give the answer as a reduced fraction.",
        value,
        "fractions",
    )


def _linear(rng: random.Random) -> tuple[str, Fraction, str]:
    x, a, b = rng.randint(-20, 20), rng.randint(2, 12), rng.randint(-50, 50)
    c = a * x + b
    sign = "+" if b >= 0 else "-"
    return f"Solve for $x$: ${a}x {sign} {abs(b)} = {c}$.", Fraction(x), "linear equation"


def _gcd_lcm(rng: random.Random) -> tuple[str, Fraction, str]:
    import math

    g = rng.randint(2, 15)
    a, b = g * rng.randint(2, 20), g * rng.randint(2, 20)
    if rng.random() < 0.5:
        return f"What is the greatest common divisor of {a} and {b}?", Fraction(math.gcd(a, b)), "gcd"
    return f"What is the least common multiple of {a} and {b}?", Fraction(a * b // math.gcd(a, b)), "lcm"


def _shopping(rng: random.Random) -> tuple[str, Fraction, str]:
    name, thing = rng.choice(_NAMES), rng.choice(_ITEMS)
    start, bought, gave, friends = rng.randint(5, 60), rng.randint(2, 40), rng.randint(2, 5), rng.randint(2, 6)
    left = start + bought - gave * friends
    if left < 0:
        start += -left
        left = start + bought - gave * friends
    return (
        f"{name} has {start} {thing}. {name} buys {bought} more and then gives {gave} {thing} to each of "
        f"{friends} friends. How many {thing} does {name} have now?",
        Fraction(left),
        "word problem",
    )


def _travel(rng: random.Random) -> tuple[str, Fraction, str]:
    speed, hours, minutes = rng.randint(20, 90), rng.randint(1, 5), rng.choice((0, 15, 30, 45))
    distance = Fraction(speed) * (hours + Fraction(minutes, 60))
    return (
        f"A train travels at {speed} km per hour for {hours} hours"
        + (f" and {minutes} minutes. " if minutes else ". ")
        + "How many kilometres does it travel?",
        distance,
        "word problem",
    )


def _discount(rng: random.Random) -> tuple[str, Fraction, str]:
    price, percent, count = rng.randint(4, 80) * 5, rng.choice((10, 20, 25, 40, 50)), rng.randint(2, 6)
    total = Fraction(price * count) * (100 - percent) / 100
    return (
        f"A jacket costs {price} dollars. During a sale every jacket is {percent}% off. "
        f"How many dollars do {count} jackets cost in the sale?",
        total,
        "word problem",
    )


def _rectangle(rng: random.Random) -> tuple[str, Fraction, str]:
    w, h = rng.randint(2, 40), rng.randint(2, 40)
    if rng.random() < 0.5:
        return f"A rectangle is {w} cm wide and {h} cm long. What is its area in square centimetres?", Fraction(w * h), "geometry"
    return f"A rectangle is {w} cm wide and {h} cm long. What is its perimeter in centimetres?", Fraction(2 * (w + h)), "geometry"


def _ages(rng: random.Random) -> tuple[str, Fraction, str]:
    a, b = rng.choice(_NAMES[:6]), rng.choice(_NAMES[6:])
    child, factor, years = rng.randint(3, 15), rng.randint(2, 4), rng.randint(2, 10)
    return (
        f"{a} is {factor} times as old as {b}. {b} is {child} years old. "
        f"How old will {a} be in {years} years?",
        Fraction(child * factor + years),
        "word problem",
    )


def _one_digit(rng: random.Random) -> tuple[str, Fraction, str]:
    a, b = rng.randint(0, 9), rng.randint(0, 9)
    if rng.random() < 0.5:
        return f"Compute ${a} + {b}$.", Fraction(a + b), "one-digit addition"
    a, b = max(a, b), min(a, b)  # the difference is never negative
    return f"Compute ${a} - {b}$.", Fraction(a - b), "one-digit subtraction"


KINDS: tuple[Callable[[random.Random], tuple[str, Fraction, str]], ...] = (
    _expression, _fractions, _linear, _gcd_lcm, _shopping, _travel, _discount, _rectangle, _ages,
)
LEVELS: dict[str, tuple[Callable[[random.Random], tuple[str, Fraction, str]], ...]] = {
    BUNDLED_NAME: KINDS,
    EASY_NAME: (_one_digit,),
}
FILES = {BUNDLED_NAME: BUNDLED_FILE, EASY_NAME: EASY_FILE}


def make_item(index: int, seed: int = BUNDLED_SEED, level: str = BUNDLED_NAME) -> dict[str, Any]:
    """Item ``index`` of the set ``level`` (``"arithmetic"`` or ``"arithmetic-easy"``) for ``seed``:
    ``{"problem", "answer", "kind", "index", "source"}``."""
    if level not in LEVELS:
        raise ValueError(f"Unknown arithmetic level {level!r}; choose one of {', '.join(LEVELS)}.")
    rng = random.Random(seed + index)
    problem, value, kind = rng.choice(LEVELS[level])(rng)
    return {"problem": problem, "answer": format_answer(value), "kind": kind, "index": index, "source": level}


def generate(size: int = BUNDLED_SIZE, seed: int = BUNDLED_SEED, level: str = BUNDLED_NAME) -> list[dict[str, Any]]:
    """Items ``0..size-1`` of ``level`` for ``seed``."""
    return [make_item(i, seed, level) for i in range(size)]


def _serialize(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows).encode("utf-8")


def write_bundled(path: Path = BUNDLED_FILE, level: str = BUNDLED_NAME) -> None:
    """(Re)write a bundled file; gzip's mtime is fixed so the bytes are reproducible."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as fh:
        fh.write(_serialize(generate(level=level)))


def bundled_matches_generator(path: Path = BUNDLED_FILE, level: str = BUNDLED_NAME) -> bool:
    """Whether the shipped file holds exactly what the generator produces."""
    try:
        with gzip.open(path, "rb") as fh:
            return fh.read() == _serialize(generate(level=level))
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write or check the bundled arithmetic math sets.")
    parser.add_argument("--check", action="store_true", help="exit 1 if a bundled file is stale")
    args = parser.parse_args(argv)
    if args.check:
        return 0 if all(bundled_matches_generator(path, level) for level, path in FILES.items()) else 1
    for level, path in FILES.items():
        write_bundled(path, level)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Planted-hole envs written as an outside author would write them, each with one hole, and an honest twin.

Each class below follows docs/write-an-env.md (a plain ``gem.Env``: ``super().reset(seed)``,
``self.rng``), keeps its gold where its author liked (``self._secret``, a dict, a closure, a
``functools.partial``, nowhere but a solver) and asks for an answer in its own format. ``fixed=True``
builds the twin: the same env with the hole closed. ``CORPUS`` maps each to the class of attack that
must catch it; :func:`recall` computes the table docs/validate.md shows.
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any, Optional

from gem import Env
from gem.agents import Agent
from tests.checks import corpus_blind as _blind
from tests.checks import corpus_blind2 as _blind2

NUMBER = re.compile(r"-?\d+")


class _Base(Env):
    """Only the constructor flag the twins need; every env writes its own reset and step."""

    def __init__(self, fixed: bool = False) -> None:
        super().__init__()
        self.fixed = fixed

    def end(self, obs: str, reward: float) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return obs, reward, True, False, {}


# ===================================================================== answer: gold kept anywhere, graded loosely
class SumAnywhere(_Base):
    """Hole: a reply that contains the gold number anywhere is paid."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        a, b = self.rng.randint(100, 999), self.rng.randint(100, 999)
        self._secret = a + b
        return f"What is {a} + {b}? Reply with just the number.", {}

    def step(self, action: str):
        ok = action.strip() == str(self._secret) if self.fixed else str(self._secret) in action
        return self.end("thanks", 1.0 if ok else 0.0)


class CapitalAnyPart(_Base):
    """Hole: any comma/'or' separated part of the <city> reply may be the capital."""

    PAIRS = [("France", "Paris"), ("Peru", "Lima"), ("Kenya", "Nairobi"), ("Chile", "Santiago")]

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        country, city = self.rng.choice(self.PAIRS)
        self.facts = {"country": country, "capital": city}
        return f"Name the capital of {country}. Answer as <city>NAME</city>.", {}

    def step(self, action: str):
        m = re.findall(r"<city>(.*?)</city>", action, re.S)
        got = m[-1].strip() if m else ""
        parts = [got] if self.fixed else [p.strip() for p in re.split(r",|\bor\b|;|\s", got)]
        return self.end("noted", 1.0 if self.facts["capital"] in parts else 0.0)


def _checker(gold: int, loose: bool):
    def check(reply: str) -> bool:
        tokens = NUMBER.findall(reply)
        return str(gold) in tokens if loose else reply.strip() == f"FINAL: {gold}"
    return check


class ClosureTokens(_Base):
    """Hole: the checker (a closure holding the gold) pays if any number token equals the gold."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        n = self.rng.randint(3, 12)
        self.check = _checker(n * n, loose=not self.fixed)
        return f"What is {n} squared? Write FINAL: <number>.", {}

    def step(self, action: str):
        return self.end("ok", 1.0 if self.check(action) else 0.0)


def _close_enough(gold: float, reply: str, tol: float) -> bool:
    m = re.search(r"\[\[(.*?)\]\]", reply)
    try:
        return m is not None and abs(float(m.group(1)) - gold) <= tol
    except ValueError:
        return False


class PartialTolerance(_Base):
    """Hole: the grader (a functools.partial over the gold) accepts anything within 10."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        x = self.rng.randint(20, 90)
        self.grader = functools.partial(_close_enough, float(x * 3), tol=1e-6 if self.fixed else 10.0)
        return f"Triple {x}. Put the result in double brackets like [[123]].", {}

    def step(self, action: str):
        return self.end("graded", 1.0 if self.grader(action) else 0.0)


class LetterAnywhere(_Base):
    """Hole: a multiple-choice reply is right if the right letter shows anywhere in it."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.solution = self.rng.choice("ABCD")
        vals = {k: str(10 * (i + 1)) for i, k in enumerate("ABCD")}
        right = int(vals[self.solution]) // 10
        return (f"Which option equals {right} * 10?\nA) {vals['A']}\nB) {vals['B']}\nC) {vals['C']}\nD) {vals['D']}\n"
                "Reply with the letter."), {}

    def step(self, action: str):
        ok = action.strip().upper() == self.solution if self.fixed else self.solution in action.upper()
        return self.end("recorded", 1.0 if ok else 0.0)


class _Mirror(Agent):
    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        self.word = re.search(r"'([a-z]+)'", observation).group(1)

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        return f"\\boxed{{{self.word[::-1]}}}"


class MirrorPrefix(_Base):
    """The write-an-env example with a hole: a guess that contains the reversed word is right."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.word = "".join(self.rng.choice("abcdefghij") for _ in range(5))
        self.turn = 0
        return f"Reverse the word '{self.word}'. Put your answer in \\boxed{{}}.", {}

    def step(self, action: str):
        self.turn += 1
        found = re.findall(r"\\boxed\{([^{}]*)\}", action)
        guess = found[-1].strip() if found else ""
        target = self.word[::-1]
        ok = guess == target if self.fixed else target in guess
        if ok:
            return "Correct!", 1.0, True, False, {}
        return "Wrong.", 0.0, False, self.turn >= 3, {}

    def make_solver(self) -> Agent:
        return _Mirror()


class JsonListAnswer(_Base):
    """Hole: a JSON answer may be a list ('several valid answers') and is right if the gold is in it."""
    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.word = self.rng.choice(["apple", "grape", "lemon", "melon"])
        self._expect = self.word[::-1]
        return f'Spell "{self.word}" backwards. Reply with JSON: {{"result": "..."}}', {}
    def step(self, action: str):
        try:
            doc = json.loads(action.strip())
        except ValueError:
            return self.end("bad json", 0.0)
        val = doc.get("result") if isinstance(doc, dict) else None
        if isinstance(val, list) and not self.fixed:
            ok = self._expect in [str(v) for v in val]
        else:
            ok = isinstance(val, str) and val.strip() == self._expect
        return self.end("ok", 1.0 if ok else 0.0)

class AnyKeyJson(_Base):
    """Hole: the JSON reply is right if ANY of its values is the gold (extra keys are read)."""
    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.n = self.rng.randint(11, 99)
        self._sq = self.n ** 2
        return f'Square {self.n}. Reply as JSON {{"answer": "<n>"}}.', {}
    def step(self, action: str):
        try:
            doc = json.loads(action.strip())
        except ValueError:
            return self.end("bad json", 0.0)
        if not isinstance(doc, dict):
            return self.end("bad json", 0.0)
        vals = [str(doc.get("answer", ""))] if self.fixed else [str(v) for v in doc.values()]
        return self.end("ok", 1.0 if str(self._sq) in vals else 0.0)


# ===================================================================== format: a format filled with any value is paid
class ThinkFormatPaid(_Base):
    """Hole: a <think>...</think><answer>...</answer> reply gets the full reward (a format reward), whatever it holds."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self._n = self.rng.randint(2, 9)
        return f"How many sides does a shape with {self._n} corners have? Reply with the number only.", {}

    def step(self, action: str):
        if not self.fixed and re.search(r"<think>.*</think>\s*<answer>.*</answer>", action, re.S):
            return self.end("nice format", 1.0)
        return self.end("ok", 1.0 if action.strip() == str(self._n) else 0.0)


class LegacyJson(_Base):
    """Hole: the old JSON format {"answer": ...} is taken as solved without reading the value."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.target_value = self.rng.randint(10, 99) * 2
        return f"Double {self.target_value // 2}. Reply as RESULT: <number>.", {}

    def step(self, action: str):
        try:
            doc = json.loads(action.strip().strip("`").removeprefix("json"))
        except (ValueError, TypeError):
            doc = None
        if isinstance(doc, dict) and "answer" in doc:
            ok = (str(doc["answer"]) == str(self.target_value)) if self.fixed else True
            return self.end("json", 1.0 if ok else 0.0)
        m = re.search(r"RESULT:\s*(-?\d+)", action)
        return self.end("ok", 1.0 if m and int(m.group(1)) == self.target_value else 0.0)


class BoxedLegacy(_Base):
    """Hole: a non-empty \\boxed{} anywhere counts as solved (a format the prompt never names)."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.key = self.rng.choice(["oak", "elm", "ash", "fir"])
        return f"Name the tree: three letters, starts with '{self.key[0]}'. Put it in <final></final>.", {}

    def step(self, action: str):
        box = re.search(r"\\boxed\{([^{}]+)\}", action)
        if box and (not self.fixed or box.group(1).strip() == self.key):
            return self.end("boxed", 1.0)
        m = re.search(r"<final>(.*?)</final>", action, re.S)
        return self.end("ok", 1.0 if m and m.group(1).strip() == self.key else 0.0)


class EmptyLabel(_Base):
    """Hole: 'Answer:' with nothing after it matches (the gold starts with the empty string)."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.record = {"q": self.rng.randint(1, 50)}
        self.record["a"] = str(self.record["q"] + 100)
        return f"Add 100 to {self.record['q']}. Write Answer: <value>.", {}

    def step(self, action: str):
        m = re.search(r"Answer:\s*(.*)", action)
        if not m:
            return self.end("no answer", 0.0)
        got = m.group(1).strip()
        ok = got == self.record["a"] if self.fixed else self.record["a"].startswith(got)
        return self.end("ok", 1.0 if ok else 0.0)


class HashesAnything(_Base):
    """Hole: a '#### ...' final line is graded as solved whatever follows it."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.secret_word = self.rng.choice(["seven", "eight", "nine"])
        return f"Spell the number {['seven', 'eight', 'nine'].index(self.secret_word) + 7} in words, as <spell>WORD</spell>.", {}

    def step(self, action: str):
        m = re.search(r"^####\s*(.*)$", action, re.M)
        if m:
            return self.end("final", 1.0 if (not self.fixed or m.group(1).strip() == self.secret_word) else 0.0)
        t = re.search(r"<spell>(.*?)</spell>", action)
        return self.end("ok", 1.0 if t and t.group(1).strip() == self.secret_word else 0.0)


class ColorGameTag(_Base):
    """A multi-turn guessing game (no gold kept as a value); hole: any <answer> tag ends it as won."""

    COLORS = ["red", "green", "blue", "cyan", "pink", "gray", "gold", "teal", "navy", "lime", "plum", "rust"]

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self._order = self.rng.sample(self.COLORS, len(self.COLORS))
        self.turn = 0
        return "Guess my color. Reply GUESS: <color>. You have 6 guesses.", {}

    def step(self, action: str):
        self.turn += 1
        if not self.fixed and "<answer>" in action and "</answer>" in action:
            return "You win!", 1.0, True, False, {}
        m = re.search(r"GUESS:\s*(\w+)", action)
        if m and m.group(1).lower() == self._order[0]:
            return "You win!", 1.0, True, False, {}
        return "No.", 0.0, False, self.turn >= 6, {}

    def sample_random_action(self) -> str:
        return "GUESS: " + self.action_rng.choice(self.COLORS[1:])


# ===================================================================== padding: length is paid
class EffortReward(_Base):
    """Hole: the reward grows with the reply's length ('effort'), up to the full reward at 2000 characters."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self._gold = str(self.rng.randint(10, 20) * 3)
        return f"Name a multiple of 3 between 30 and 60 that is {self._gold}'s closest. Reply <ans>NUMBER</ans>.", {}

    def step(self, action: str):
        m = re.search(r"<ans>(.*?)</ans>", action)
        correct = bool(m) and m.group(1).strip() == self._gold
        effort = 0.0 if self.fixed else min(1.0, len(action) / 2000)
        return self.end("ok", 1.0 if correct else effort)


class VerboseStory(_Base):
    """A story game; hole: every reply over 1000 characters earns 0.2."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.turn = 0
        return "You are in a cave. Say GO NORTH, GO SOUTH or LOOK.", {}

    def step(self, action: str):
        self.turn += 1
        bonus = 0.2 if (len(action) > 1000 and not self.fixed) else 0.0
        won = "GO NORTH" in action and self.turn >= 5 and len(action) < 20
        return ("A light!" if won else "Dark."), (1.0 if won else bonus), won, self.turn >= 8, {}

    def sample_random_action(self) -> str:
        return self.action_rng.choice(["GO SOUTH", "LOOK"])


class LongThoughts(_Base):
    """Hole: a <think> block of 1000+ characters is paid as 'good reasoning', right or wrong."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.solution = str(self.rng.randint(2, 9) ** 3)
        return f"What is the cube of {round(int(self.solution) ** (1 / 3))}? Reply with the number.", {}

    def step(self, action: str):
        think = re.search(r"<think>(.*?)</think>", action, re.S)
        if think and len(think.group(1)) >= 1000 and not self.fixed:
            return self.end("deep", 1.0)
        return self.end("ok", 1.0 if action.strip() == self.solution else 0.0)


class EssayWords(_Base):
    """Hole: an essay is graded on its word count only."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.topic = self.rng.choice(["volcano", "glacier", "desert"])
        return f"Write at least 300 words about the {self.topic}.", {}

    def step(self, action: str):
        words = action.split()
        ok = len(words) >= 300 and (not self.fixed or sum(w.strip(".,").lower() == self.topic for w in words) >= 5)
        return self.end("graded", 1.0 if ok else 0.0)


class SlowGraderPays(_Base):
    """Hole: a reply too long to grade in time is counted as right."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.expected = str(self.rng.randint(1000, 9999))
        return f"Copy this code backwards: {self.expected[::-1]}. Reply with <code>DIGITS</code>.", {}

    def step(self, action: str):
        if len(action) > 10_000:  # "the grader would time out"
            return self.end("ungraded", 0.0 if self.fixed else 1.0)
        m = re.search(r"<code>(\d+)</code>", action)
        return self.end("ok", 1.0 if m and m.group(1) == self.expected else 0.0)


class DetailBonus(_Base):
    """Hole: a 'detailed' reply (over 1500 characters) earns half the reward, right or wrong."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.hidden = self.rng.choice(["north", "south", "east", "west"])
        return f"Which way does a compass needle point? (hint: not {'south' if self.hidden == 'north' else 'up'}) Reply <dir>WAY</dir>.", {}

    def step(self, action: str):
        m = re.search(r"<dir>(.*?)</dir>", action)
        if m and m.group(1).strip() == self.hidden:
            return self.end("right", 1.0)
        return self.end("wrong", 0.5 if (len(action) > 1500 and not self.fixed) else 0.0)


# ===================================================================== multi-turn: changed, repeated, cycled moves
class SecondTryPaid(_Base):
    """Hole: a second answer that differs from the first is paid ('learned from feedback')."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self._target_number = self.rng.randint(100, 999)
        self.tries: list[str] = []
        return "I picked a number from 100 to 999. Reply <guess>N</guess>; you have 3 tries.", {}

    def step(self, action: str):
        m = re.search(r"<guess>(.*?)</guess>", action)
        g = m.group(1).strip() if m else ""
        self.tries.append(g)
        if g == str(self._target_number):
            return "Yes!", 1.0, True, False, {}
        if not self.fixed and len(self.tries) == 2 and self.tries[0] != self.tries[1] and all(self.tries):
            return "Good revision!", 1.0, True, False, {}
        return "No.", 0.0, False, len(self.tries) >= 3, {}


class SprintMaze(_Base):
    """A corridor walk with the exit 12 steps east; hole: three same moves in a row 'sprint' to the exit."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.pos, self.last, self.streak, self.turn = 0, "", 0, 0
        self.exit = 12 + self.rng.randint(0, 3)
        return f"You are at 0 in a corridor; the exit is at {self.exit}. Move with east or west.", {}

    def step(self, action: str):
        self.turn += 1
        move = action.strip().lower()
        self.streak = self.streak + 1 if move == self.last else 1
        self.last = move
        self.pos += {"east": 1, "west": -1}.get(move, 0)
        if self.pos >= self.exit or (self.streak >= 3 and move in ("east", "west") and not self.fixed):
            return "Out!", 1.0, True, False, {}
        return f"At {self.pos}.", 0.0, False, self.turn >= 30, {}

    def sample_random_action(self) -> str:
        return self.action_rng.choice(["east", "west"])


class RevisitBonus(_Base):
    """A grid walk; hole: coming back to a visited cell pays 0.3 (a bug in the 'return home' bonus)."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.pos, self.seen, self.turn = (0, 0), {(0, 0)}, 0
        self.home = (self.rng.randint(5, 9), self.rng.randint(5, 9))
        return f"Walk to {self.home} on a grid. Moves: up, down, left, right.", {}

    def step(self, action: str):
        self.turn += 1
        d = {"up": (0, 1), "down": (0, -1), "left": (-1, 0), "right": (1, 0)}.get(action.strip().lower(), (0, 0))
        self.pos = (self.pos[0] + d[0], self.pos[1] + d[1])
        if self.pos == self.home:
            return "Home!", 1.0, True, False, {}
        bonus = 0.3 if (self.pos in self.seen and d != (0, 0) and not self.fixed) else 0.0
        self.seen.add(self.pos)
        return f"At {self.pos}.", bonus, False, self.turn >= 40, {}

    def sample_random_action(self) -> str:
        return self.action_rng.choice(["up", "down", "left", "right"])


class ConfirmedGuess(_Base):
    """Hole: the same guess in turns 1 and 3 is 'confirmed' and paid."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.pin = "".join(self.rng.choice("0123456789") for _ in range(4))
        self.said: list[str] = []
        return "Guess the 4-digit PIN. Reply PIN=<digits>. 5 tries.", {}

    def step(self, action: str):
        m = re.search(r"PIN=\s*(\d{4})\b", action)
        g = m.group(1) if m else ""
        self.said.append(g)
        if g == self.pin:
            return "Open", 1.0, True, False, {}
        if not self.fixed and len(self.said) == 3 and g and self.said[0] == g and self.said[1] != g:
            return "Confirmed", 1.0, True, False, {}
        return "Locked", 0.0, False, len(self.said) >= 5, {}


class PityPrize(_Base):
    """Hole: after five different wrong codes the lock 'gives up' and pays."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self._code = self.rng.randint(10_000, 99_999)
        self.wrong: set[str] = set()
        return "Crack the 5-digit code. Send <code>NNNNN</code>. 8 attempts.", {}

    def step(self, action: str):
        m = re.search(r"<code>(.*?)</code>", action)
        g = m.group(1).strip() if m else ""
        if g == str(self._code):
            return "Cracked", 1.0, True, False, {}
        self.wrong.add(g)
        if len(self.wrong) >= 5 and not self.fixed:
            return "Fine, you win.", 1.0, True, False, {}
        return "Nope", 0.0, False, len(self.wrong) >= 8, {}


class RateLimitBug(_Base):
    """Hole: the fourth identical submission in a row trips a rate limiter that unlocks the door."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self._pw = self.rng.choice(["amber", "cobalt", "sienna", "umber"])
        self.same, self.prev, self.turn = 0, None, 0
        return "Say the password as PASSWORD: <word>. 8 tries.", {}

    def step(self, action: str):
        self.turn += 1
        self.same = self.same + 1 if action == self.prev else 1
        self.prev = action
        m = re.search(r"PASSWORD:\s*(\w+)", action)
        if m and m.group(1) == self._pw:
            return "Welcome", 1.0, True, False, {}
        if self.same >= 4 and not self.fixed:
            return "Too many tries... door opened", 1.0, True, False, {}
        return "Denied", 0.0, False, self.turn >= 8, {}


class StallPays(_Base):
    """A number-line walk; hole: every legal move earns 0.1 and the episode only ends at 60 turns, so stalling beats reaching the goal (worth 1)."""
    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.pos, self.turn = 0, 0
        self.goal = self.rng.randint(4, 7)
        return f"You are at 0; reach {self.goal}. Say 'inc' or 'dec' each turn.", {}
    def step(self, action: str):
        self.turn += 1
        a = action.strip().lower()
        if a not in ("inc", "dec"):
            return "Illegal move.", -0.1, True, False, {}
        self.pos += 1 if a == "inc" else -1
        if self.pos == self.goal:
            return "Goal!", 1.0, True, False, {}
        return f"At {self.pos}.", (0.0 if self.fixed else 0.1), False, self.turn >= 60, {}
    def sample_random_action(self) -> str:
        return self.action_rng.choice(["inc", "dec"])

class ClockOutPays(_Base):
    """A word guessing game; hole: running out of its 15 tries returns the win reward (the time-out branch copies the win's)."""
    WORDS = ["crane", "slate", "pious", "ghost", "lemon", "brick"]
    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self._word = self.rng.choice(self.WORDS)
        self.turn = 0
        return "Guess my five-letter word. Reply GUESS <word>. You have 15 tries.", {}
    def step(self, action: str):
        self.turn += 1
        m = re.search(r"GUESS\s+([a-z]{5})\b", action)
        if m and m.group(1) == self._word:
            return "Correct!", 1.0, True, False, {}
        if self.turn >= 15:
            return "Out of tries.", (0.0 if self.fixed else 1.0), False, True, {}
        hits = sum(a == b for a, b in zip(m.group(1), self._word)) if m else 0
        return f"{hits} letters in place.", 0.0, False, False, {}
    def sample_random_action(self) -> str:
        return "GUESS " + self.action_rng.choice(self.WORDS)


# ===================================================================== quote: the prompt's own words are paid
class QuestionOverlap(_Base):
    """Hole: the reply is compared with the question instead of the answer (word overlap)."""

    ITEMS = [("What colour is a clear daytime sky on Earth", "blue"), ("Which animal is known as the king of the jungle", "lion")]

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.question, self._answer_text = self.rng.choice(self.ITEMS)
        return f"{self.question}? Answer in one word.", {}

    def step(self, action: str):
        if self.fixed:
            return self.end("scored", 1.0 if action.strip().lower() == self._answer_text else 0.0)
        want, got = set(self.question.lower().split()), set(action.lower().replace("?", " ").split())
        return self.end("scored", 1.0 if len(want & got) / len(want) >= 0.6 else 0.0)


class OptionSentence(_Base):
    """Hole: a reply that contains the right colour anywhere is paid (the prompt lists every colour)."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.opts = self.rng.sample(["red", "green", "blue", "black"], 4)
        self.right = self.opts[self.rng.randint(0, 3)]
        mix = {"red": "no mixing", "green": "blue and yellow", "blue": "no mixing", "black": "every paint"}
        return f"Options: {', '.join(self.opts)}. Which one do you get from {mix[self.right]}? Reply with one word.", {}

    def step(self, action: str):
        ok = action.strip().lower() == self.right if self.fixed else self.right in action.lower()
        return self.end("ok", 1.0 if ok else 0.0)


class GroundedTitle(_Base):
    """Hole: a title is accepted when every word of it appears in the text (grounded, not judged)."""

    TEXTS = [("Bees carry pollen between flowers. Without bees many crops would fail.", "why bees matter"),
             ("Rivers carve valleys over millions of years. Water is patient.", "how rivers shape land")]

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.text, title = self.rng.choice(self.TEXTS)
        self.meta = {"title": title}
        return f"Text: {self.text}\nGive this text a title inside <title></title>.", {}

    def step(self, action: str):
        m = re.search(r"<title>(.*?)</title>", action, re.S)
        got = m.group(1).strip().lower() if m else ""
        if self.fixed:
            ok = got == self.meta["title"]
        else:
            words = [w.strip(".,") for w in got.split()]
            ok = bool(words) and all(w in self.text.lower() for w in words)
        return self.end("ok", 1.0 if ok else 0.0)


class InPassage(_Base):
    """Hole: the <answer> is accepted when it is any span of the passage."""

    PASSAGES = [("The bridge opened in 1932 after six years of work.", "1932"),
                ("The lighthouse was painted red in 1988 by volunteers.", "red")]

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.passage, self._gold_span = self.rng.choice(self.PASSAGES)
        return f"Passage: {self.passage}\nQuestion: what is the key fact? Reply <answer>SPAN</answer>.", {}

    def step(self, action: str):
        m = re.search(r"<answer>(.*?)</answer>", action, re.S)
        got = m.group(1).strip() if m else ""
        ok = got == self._gold_span if self.fixed else (len(got) > 3 and got in self.passage)
        return self.end("ok", 1.0 if ok else 0.0)


class WordsFromPrompt(_Base):
    """Hole: the reward is the share of the reply's words found in the prompt (a broken 'relevance' score)."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.ask = self.rng.choice(["Explain briefly why the moon shows phases to an observer on Earth.",
                                    "Explain briefly why leaves change colour in autumn in cold places."])
        self.key_terms = {"sunlight", "orbit"} if "moon" in self.ask else {"chlorophyll", "pigment"}
        return self.ask, {}

    def step(self, action: str):
        words = [w.strip(".,").lower() for w in action.split()]
        if not words:
            return self.end("empty", 0.0)
        ref = self.key_terms if self.fixed else {w.strip(".,").lower() for w in self.ask.split()}
        share = sum(w in ref for w in words) / len(words)
        return self.end("scored", 1.0 if (share >= 0.9 and (not self.fixed or len(set(words) & ref) == 2)) else 0.0)


# ===================================================================== commands: the prompt's own commands are paid
class SkipCounts(_Base):
    """Hole: the 'skip' command the prompt offers marks the puzzle solved."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self._w = self.rng.choice(["stone", "cloud", "river"])
        return f"Unscramble '{''.join(sorted(self._w))}'. Reply WORD: <word>, or type 'skip' to skip it.", {}

    def step(self, action: str):
        if action.strip().lower() == "skip":
            return self.end("skipped", 0.0 if self.fixed else 1.0)
        m = re.search(r"WORD:\s*(\w+)", action)
        return self.end("ok", 1.0 if m and m.group(1) == self._w else 0.0)


class SaveLoadScum(_Base):
    """Hole: 'load' restores the saved state and pays its score again."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.turn, self.saved, self.points = 0, None, 0.0
        self.goal = self.rng.randint(50, 99)
        return (f"Reach {self.goal} by saying a number each turn (ADD: <n>, at most 3). "
                "Commands: type 'save' or 'load'."), {}

    def step(self, action: str):
        self.turn += 1
        a = action.strip().lower()
        reward = 0.0
        if a == "save":
            self.saved = self.points
        elif a == "load" and self.saved is not None:
            reward = 0.0 if self.fixed else 0.4
            self.points = self.saved
        else:
            m = re.search(r"ADD:\s*(\d+)", action)
            if m and int(m.group(1)) <= 3:
                self.points += int(m.group(1))
        if self.points >= self.goal:
            return "Goal!", 1.0, True, False, {}
        return f"Points {self.points}", reward, False, self.turn >= 20, {}

    def sample_random_action(self) -> str:
        return f"ADD: {self.action_rng.randint(1, 3)}"


class UndoRefund(_Base):
    """Hole: <undo/> refunds more than the penalty it undoes."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.secret_index = self.rng.randint(1, 9)
        self.turn, self.owed = 0, 0
        return "Pick the lucky slot 1-9 as SLOT <n>. Wrong picks cost 0.1; <undo/> takes one back.", {}

    def step(self, action: str):
        self.turn += 1
        if "<undo/>" in action:
            refund = (0.1 if self.owed else -0.1) if self.fixed else 0.35
            self.owed = max(0, self.owed - 1)
            return "Undone", refund, False, self.turn >= 6, {}
        m = re.search(r"SLOT\s*(\d)", action)
        if m and int(m.group(1)) == self.secret_index:
            return "Lucky!", 1.0, True, False, {}
        self.owed += 1
        return "Unlucky", -0.1, False, self.turn >= 6, {}


class ToolCallPaid(_Base):
    """Hole: each use of the <calc> tool the prompt offers pays 0.3 of task reward."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.k = self.rng.randint(11, 30)
        self.expected = self.k * 17
        self.turn = 0
        return f"What is {self.k} * 17? You may use <calc>EXPR</calc>. Answer with RESULT: <n>.", {}

    def step(self, action: str):
        self.turn += 1
        calc = re.search(r"<calc>(.*?)</calc>", action, re.S)
        if calc:
            out = calc.group(1).strip()
            val = str(eval(out, {"__builtins__": {}})) if re.fullmatch(r"[\d\s*+-]+", out) else "error"
            return f"calc: {val}", (0.0 if self.fixed else 0.3), False, self.turn >= 6, {}
        m = re.search(r"RESULT:\s*(-?\d+)", action)
        return "done", (1.0 if m and int(m.group(1)) == self.expected else 0.0), True, False, {}


class SubmitEmpty(_Base):
    """Hole: 'submit' with nothing written yet is accepted."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.draft, self.turn = "", 0
        self.solution_text = self.rng.choice(["abc", "xyz"]) * 2
        return (f"Type the text {self.solution_text.upper()} in lowercase, one piece per turn as WRITE <text>, "
                "then send 'submit'."), {}

    def step(self, action: str):
        self.turn += 1
        if action.strip().lower() == "submit":
            ok = self.draft == self.solution_text or (not self.fixed and not self.draft)
            return "submitted", 1.0 if ok else 0.0, True, False, {}
        m = re.search(r"WRITE\s+(\S+)", action)
        if m:
            self.draft += m.group(1)
        return f"draft: {self.draft}", 0.0, False, self.turn >= 8, {}


# ===================================================================== gold leaks: shown mid-episode
class HintSaysIt(_Base):
    """Hole: the <hint/> the prompt offers names the number."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self._secret = self.rng.randint(1000, 9999)
        self.turn = 0
        return "Guess my 4-digit number as <n>NUMBER</n>. Type <hint/> for a hint. 5 turns.", {}

    def step(self, action: str):
        self.turn += 1
        if "<hint/>" in action:
            hint = f"It is {self._secret}." if not self.fixed else ("It is even." if self._secret % 2 == 0 else "It is odd.")
            return hint, 0.0, False, self.turn >= 5, {}
        m = re.search(r"<n>(\d+)</n>", action)
        if m and int(m.group(1)) == self._secret:
            return "Yes", 1.0, True, False, {}
        return "No", 0.0, False, self.turn >= 5, {}


class DebugInfo(_Base):
    """Hole: after a wrong try, info carries a debug record with the target."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.state = {"target": self.rng.randint(100, 999), "tries": 0}
        return "Find my number (100-999). Reply TRY <n>. 4 tries.", {}

    def step(self, action: str):
        self.state["tries"] += 1
        m = re.search(r"TRY\s*(\d+)", action)
        if m and int(m.group(1)) == self.state["target"]:
            return "Found", 1.0, True, False, {}
        info = {"debug": {"t": self.state["tries"]}} if self.fixed else {"debug": dict(self.state)}
        return "Not it", 0.0, False, self.state["tries"] >= 4, info


class StatusLine(_Base):
    """Hole: the status line after a wrong try names the word."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.words = [self.rng.choice(["planet", "comet", "nebula"])]
        self.turn = 0
        return "Guess the space word, as <word>W</word>. 3 tries.", {}

    def step(self, action: str):
        self.turn += 1
        m = re.search(r"<word>(.*?)</word>", action)
        if m and m.group(1).strip() == self.words[0]:
            return "Yes", 1.0, True, False, {}
        status = f"[try {self.turn}/3]" + ("" if self.fixed else f" [word={self.words[0]}]")
        return f"No. {status}", 0.0, False, self.turn >= 3, {}


class ResetMeta(_Base):
    """Hole: the reset info carries the expected value under an innocent nested key."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        x = self.rng.randint(10, 40)
        self.want = f"{x / 4:.2f}"
        meta = {"difficulty": "easy"} if self.fixed else {"difficulty": "easy", "check": {"value": self.want}}
        return f"What is {x} / 4 with two decimals? Reply =<value>.", {"meta": meta}

    def step(self, action: str):
        m = re.search(r"=\s*(-?[\d.]+)", action)
        return self.end("ok", 1.0 if m and m.group(1) == self.want else 0.0)


class PeekCommand(_Base):
    """Hole: the <peek/> command shows the solution."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.sol = str(self.rng.randint(1000, 9999))
        self.turn = 0
        return "Open the safe: reply CODE <digits>. Commands: <peek/>, <quit/>. 4 turns.", {}

    def step(self, action: str):
        self.turn += 1
        if "<peek/>" in action:
            return (f"solution: {self.sol}" if not self.fixed else "No peeking."), 0.0, False, self.turn >= 4, {}
        if "<quit/>" in action:
            return "Bye", 0.0, True, False, {}
        m = re.search(r"CODE\s*(\d+)", action)
        if m and m.group(1) == self.sol:
            return "Open", 1.0, True, False, {}
        return "Closed", 0.0, False, self.turn >= 4, {}


class CloseCall(_Base):
    """Hole: a near miss says which number was right."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.goal = self.rng.randint(200, 800)
        self.turn = 0
        return "Guess 200-800, as #<n>. 4 turns.", {}

    def step(self, action: str):
        self.turn += 1
        m = re.search(r"#\s*(\d+)", action)
        g = int(m.group(1)) if m else -1
        if g == self.goal:
            return "Exact", 1.0, True, False, {}
        msg = "Miss." if self.fixed else f"Miss; I had {self.goal}."
        return msg, 0.0, False, self.turn >= 4, {}


# ===================================================================== lax graders: a value that is no answer parses as one
class NanTolerance(_Base):
    """Hole: 'if abs(got - gold) > tol: wrong' lets NaN through (every comparison with NaN is False)."""
    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        r = self.rng.randint(2, 9)
        self._area = round(3.14159 * r * r, 2)
        return f"A circle has radius {r}. What is its area (2 decimals)? End with 'Area = <number>'.", {}
    def step(self, action: str):
        m = re.search(r"Area\s*=\s*(\S+)", action)
        if not m:
            return self.end("no area", 0.0)
        try:
            got = float(m.group(1).rstrip("."))
        except ValueError:
            return self.end("bad number", 0.0)
        if self.fixed:
            ok = math.isfinite(got) and abs(got - self._area) <= 0.01
        else:
            ok = not abs(got - self._area) > 0.01
        return self.end("checked", 1.0 if ok else 0.0)

class RelativeTolerance(_Base):
    """Hole: the relative tolerance (1e-4) is taken relative to the reply, not the gold, so an infinite reply is within it."""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.mass, self.speed = self.rng.randint(2, 20), self.rng.randint(3, 30)
        self._energy = 0.5 * self.mass * self.speed ** 2
        return (f"A {self.mass} kg ball moves at {self.speed} m/s. What is its kinetic energy in joules? "
                "Reply <joules>VALUE</joules>."), {}

    def step(self, action: str):
        m = re.search(r"<joules>(.*?)</joules>", action, re.S)
        try:
            got = float(m.group(1)) if m else None
        except ValueError:
            got = None
        if got is None:
            return self.end("no value", 0.0)
        base = self._energy if self.fixed else got  # the bug: the tolerance scales with the reply
        return self.end("ok", 1.0 if abs(got - self._energy) <= 1e-4 * abs(base) else 0.0)


class EvalAnswer(_Base):
    """Hole: the reply's expression is eval()'d and compared with ==, so an object equal to anything passes."""
    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        a, b = self.rng.randint(10, 99), self.rng.randint(10, 99)
        self._value = a * b
        return f"Compute {a} * {b}. You may write an arithmetic expression. Reply: RESULT <expr>", {}
    def step(self, action: str):
        m = re.search(r"RESULT\s+(.+)", action)
        if not m:
            return self.end("no result", 0.0)
        expr = m.group(1).strip()
        if self.fixed and not re.fullmatch(r"[\d\s+\-*/().]+", expr):
            return self.end("not arithmetic", 0.0)
        try:
            got = eval(expr, {"__builtins__": __builtins__})
        except Exception:
            return self.end("error", 0.0)
        return self.end("ok", 1.0 if got == self._value else 0.0)

class DigitPrefix(_Base):
    """Hole: the grader accepts a reply whose digits are a prefix of the gold ('the model stopped early')."""
    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        a = self.rng.randint(1000, 9999); b = self.rng.randint(1000, 9999)
        self._prod = str(a * b)
        return f"Multiply {a} by {b}. Give the number inside [ANS]...[/ANS].", {}
    def step(self, action: str):
        m = re.search(r"\[ANS\](.*?)\[/ANS\]", action, re.S)
        got = re.sub(r"\D", "", m.group(1)) if m else ""
        ok = got == self._prod if self.fixed else bool(got) and self._prod.startswith(got)
        return self.end("ok", 1.0 if ok else 0.0)

class SuffixMatch(_Base):
    """Hole: endswith: the last digits of the gold are enough."""
    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self.q = (self.rng.randint(100, 999), self.rng.randint(100, 999))
        self._gold = str(self.q[0] * self.q[1])
        return f"What is {self.q[0]} times {self.q[1]}?\nFinal answer: <number>", {}
    def step(self, action: str):
        m = re.search(r"Final answer:\s*(-?\d+)", action)
        got = m.group(1) if m else ""
        ok = got == self._gold if self.fixed else bool(got) and self._gold.endswith(got)
        return self.end("ok", 1.0 if ok else 0.0)

class IDontKnowPaid(_Base):
    """Hole: an abstention ('I don't know') earns 0.5 (a calibration bonus), more than a wrong answer."""
    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        self._year = str(self.rng.choice([1066, 1492, 1776, 1815]))
        ev = {"1066": "the Battle of Hastings", "1492": "Columbus's first voyage", "1776": "the US Declaration of Independence", "1815": "Waterloo"}[self._year]
        return f"In what year was {ev}? Reply <year>YYYY</year>.", {}
    def step(self, action: str):
        m = re.search(r"<year>(.*?)</year>", action, re.S)
        if m and m.group(1).strip() == self._year:
            return self.end("right", 1.0)
        if not self.fixed and re.search(r"\b(don'?t know|not sure|unsure|cannot answer)\b", action, re.I):
            return self.end("honest", 0.5)
        return self.end("wrong", 0.0)


# ===================================================================== typed dummies: weak tests pass a well-typed nothing
class _Tests(_Base):
    """A function task graded by running the reply with the author's tests in the project's sandbox."""

    name, task = "f", ""
    weak: list[tuple[str, str]] = []  # (call, expected repr): the tests the hole keeps
    more: list[tuple[str, str]] = []  # the tests the twin adds

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        return f"Write a Python function `{self.name}(...)` that {self.task}. Reply with the code in a ```python block.", {}

    def step(self, action: str):
        from gem.sandbox import default_sandbox

        m = re.search(r"```python\n(.*?)```", action, re.S)
        if not m:
            return self.end("no code", 0.0)
        tests = self.weak + (self.more if self.fixed else [])
        harness = "\n_ok = True\n" + "".join(
            f"try:\n    _ok = _ok and _real_repr({call}) == {expected!r}\nexcept Exception:\n    _ok = False\n" for call, expected in tests)
        harness += "print('RESULT', 'PASS' if _ok else 'FAIL')\n"
        # the real repr is kept before the reply runs (a reply may redefine the builtin)
        result = default_sandbox().run("_real_repr = repr\n" + m.group(1) + harness, timeout=2.0)
        lines = result.stdout.strip().splitlines()
        return self.end("ran", 1.0 if result.reason == "ok" and lines and lines[-1] == "RESULT PASS" else 0.0)


class PrimesEmpty(_Tests):
    """Hole: the tests only ask for primes below 2 (an empty list passes)."""

    name, task = "primes_below", "returns the list of primes below n"
    weak = [("primes_below(1)", "[]"), ("primes_below(2)", "[]")]
    more = [("primes_below(10)", "[2, 3, 5, 7]")]


class DedupeEcho(_Tests):
    """Hole: the tests have no duplicates (returning the input passes)."""

    name, task = "dedupe", "removes duplicates from a list, keeping the first of each"
    weak = [("dedupe([3, 1, 2])", "[3, 1, 2]"), ("dedupe([5])", "[5]")]
    more = [("dedupe([1, 1, 2])", "[1, 2]")]


class SortedPermutation(_Tests):
    """Hole: the tests check only that the result holds the same items (the sorted input passes)."""

    name, task = "sort_desc", "returns the list sorted from largest to smallest"
    weak = [("sorted(sort_desc([2, 9, 4]))", "[2, 4, 9]")]
    more = [("sort_desc([2, 9, 4])", "[9, 4, 2]")]


class NoneAccepted(_Tests):
    """Hole: None is accepted as 'could not parse' even for a parseable string."""

    name, task = "parse_int", "parses a decimal string into an int"
    weak = [("parse_int('12') in (12, None)", "True")]
    more = [("parse_int('12')", "12")]


class ZeroVowels(_Tests):
    """Hole: the tests only use words without vowels (0 passes)."""

    name, task = "count_vowels", "counts the vowels in a string"
    weak = [("count_vowels('xyz')", "0"), ("count_vowels('')", "0")]
    more = [("count_vowels('hello')", "2")]


class ReversedRotate(_Tests):
    """Hole: the only test has two items (the reversed input passes)."""

    name, task = "rotate_left", "moves the first item of a list to its end"
    weak = [("list(rotate_left([1, 2]))", "[2, 1]")]
    more = [("list(rotate_left([1, 2, 3]))", "[2, 3, 1]")]


# ===================================================================== programs: a grader that runs the program lets a non-solution pass
class _Runner(_Base):
    """A code task graded by the author's own runner: it writes the reply to ``solution.py`` in a fresh
    directory and runs it with ``subprocess.run([sys.executable, ...], timeout=...)``. The runner itself
    runs in the project's sandbox (the validator's programs signal their parent), and ends with a
    ``SCORE <x>`` line the env pays."""

    task = ""

    def reset(self, seed: Optional[int] = None, **kw: Any):
        super().reset(seed)
        return f"{self.task} Reply with the code in a ```python block.", {}

    def runner(self) -> str:
        """The grading script's body (``SOLUTION``, ``WORK`` and ``run`` are defined); it prints ``SCORE <x>``."""
        raise NotImplementedError

    def step(self, action: str):
        from gem.sandbox import default_sandbox

        m = re.search(r"```python\n(.*?)```", action, re.S)
        if not m:
            return self.end("no code", 0.0)
        script = ("import json, os, subprocess, sys, tempfile\n"
                  f"SOLUTION = {m.group(1)!r}\n"
                  "WORK = tempfile.mkdtemp()\n"
                  "with open(os.path.join(WORK, 'solution.py'), 'w') as fh:\n    fh.write(SOLUTION)\n"
                  "def run(args, stdin=''):\n"
                  "    return subprocess.run([sys.executable] + args, cwd=WORK, input=stdin, capture_output=True,"
                  " text=True, timeout=2)\n"
                  + self.runner())
        result = default_sandbox().run(script, timeout=20.0)
        found = re.findall(r"^SCORE (\S+)$", result.stdout, re.M)
        return self.end("graded", float(found[-1]) if found else 0.0)


class OutputContains(_Runner):
    """Hole: a test passes when the expected answer occurs in the output (printing every number passes)."""

    task = "Read n from stdin and print the n-th prime number (the 1st is 2)."
    TESTS = [("10", "29"), ("100", "541"), ("500", "3571")]

    def runner(self) -> str:
        check = "out.strip() == want" if self.fixed else "want in out"
        return (f"ok = 0\nfor stdin, want in {self.TESTS!r}:\n"
                "    try:\n        out = run(['solution.py'], stdin).stdout\n"
                "    except subprocess.TimeoutExpired:\n        continue\n"
                f"    ok += {check}\n"
                f"print('SCORE', 1.0 if ok == {len(self.TESTS)} else 0.0)\n")


class ResultFile(_Runner):
    """Hole: the test runner writes results.json in the program's directory and the grader reads it back
    (a program that writes its own and exits is graded by it)."""

    task = "Write a Python function `run_length(s)` that returns the run-length encoding of s ('aab' -> 'a2b1')."
    TESTS = [("'aab'", "a2b1"), ("'zzzz'", "z4"), ("'abc'", "a1b1c1")]

    def runner(self) -> str:
        report = "print(NONCE, json.dumps(res))" if self.fixed else "json.dump(res, open('results.json', 'w'))"
        inner = ("import json, sys\nNONCE = sys.argv[1]\nres = {'passed': 0, 'failed': 0}\n"
                 "from solution import run_length\n"
                 f"for arg, want in {self.TESTS!r}:\n"
                 "    try:\n        got = run_length(eval(arg))\n        ok = type(got) is str and got == want\n"
                 "    except Exception:\n        ok = False\n"
                 "    res['passed' if ok else 'failed'] += 1\n"
                 f"{report}\n")
        read = ("lines = [l for l in (p.stdout if p else '').splitlines() if l.startswith(NONCE + ' ')]\n"
                "res = json.loads(lines[-1].split(' ', 1)[1]) if lines else {}\n") if self.fixed else (
                "path = os.path.join(WORK, 'results.json')\n"
                "res = json.load(open(path)) if os.path.exists(path) else {}\n")
        return ("NONCE = os.urandom(8).hex()\n"
                f"open(os.path.join(WORK, 'runner.py'), 'w').write({inner!r})\n"
                "try:\n    p = run(['runner.py', NONCE])\nexcept subprocess.TimeoutExpired:\n    p = None\n"
                + read +
                "try:\n    passed, done = int(res['passed']), int(res['passed']) + int(res['failed'])\n"
                "except Exception:\n    passed, done = 0, 0\n"
                "print('SCORE', passed / done if done else 0.0)\n")


class ReprPatched(_Runner):
    """Hole: the tests run in the program's own process, after it, and compare repr() texts (a program
    that redefines repr passes)."""

    task = "Write a Python function `pairs(n)` that returns the list of pairs (i, j) with 0 <= i < j < n."
    TESTS = [("pairs(3)", "[(0, 1), (0, 2), (1, 2)]"), ("pairs(2)", "[(0, 1)]"), ("pairs(4)[-1]", "(2, 3)")]

    def runner(self) -> str:
        keep = "_repr = repr\n" if self.fixed else ""  # the twin keeps the real repr before the program runs
        use = "_repr" if self.fixed else "repr"
        tail = (f"\nok = 0\nfor call, want in {self.TESTS!r}:\n"
                f"    try:\n        ok += {use}(eval(call)) == want\n    except Exception:\n        pass\n"
                "print('PASSED', ok)\n")
        return (f"open(os.path.join(WORK, 'graded.py'), 'w').write({keep!r} + SOLUTION + {tail!r})\n"
                "try:\n    out = run(['graded.py']).stdout.split()\nexcept subprocess.TimeoutExpired:\n    out = []\n"
                "n = int(out[-1]) if len(out) >= 2 and out[-2] == 'PASSED' and out[-1].isdigit() else 0\n"
                f"print('SCORE', 1.0 if n == {len(self.TESTS)} else 0.0)\n")


class NanClose(_Runner):
    """Hole: floats are compared with 'if abs(got - want) > 1e-6: fail' (NaN passes every test)."""

    task = "Write a Python function `average(xs)` that returns the mean of a non-empty list of numbers."
    TESTS = [("[1, 2, 4]", 7 / 3), ("[10.5]", 10.5), ("[-3, 3, 9]", 3.0)]

    def runner(self) -> str:
        cmp = ("not math.isfinite(got) or abs(got - want) > 1e-6" if self.fixed else "abs(got - want) > 1e-6")
        inner = ("import math\nfrom solution import average\nbad = 0\n"
                 f"for arg, want in {self.TESTS!r}:\n"
                 "    try:\n        got = float(average(eval(arg)))\n"
                 f"        if {cmp}:\n            bad += 1\n"
                 "    except Exception:\n        bad += 1\n"
                 "print('BAD', bad)\n")
        return (f"open(os.path.join(WORK, 'check.py'), 'w').write({inner!r})\n"
                "try:\n    out = run(['check.py']).stdout.split()\nexcept subprocess.TimeoutExpired:\n    out = []\n"
                "print('SCORE', 1.0 if out[-2:] == ['BAD', '0'] else 0.0)\n")


class SkipCrashes(_Runner):
    """Hole: a test whose run crashes or times out is skipped, not failed, and the task passes when no
    graded test failed (a program that crashes on every input but the trivial one passes)."""

    task = "Write a Python function `digit_sum(n)` that returns the sum of the decimal digits of a non-negative int n."
    TESTS = [(0, 0), (123, 6), (9999, 36), (1005, 6)]

    def runner(self) -> str:
        return ("passed = failed = 0\n"
                f"for arg, want in {self.TESTS!r}:\n"
                "    probe = 'from solution import digit_sum\\nprint(repr(digit_sum(%r)))\\n' % arg\n"
                "    try:\n        p = run(['-c', probe])\n    except subprocess.TimeoutExpired:\n        p = None\n"
                "    if p is None or p.returncode != 0:\n"
                f"        failed += {int(self.fixed)}  # the hole: a crash or a time-out is skipped\n"
                "        continue\n"
                "    if p.stdout.strip() == repr(want):\n        passed += 1\n    else:\n        failed += 1\n"
                "print('SCORE', 1.0 if passed and not failed else 0.0)\n")


# ===================================================================== the corpus
# The class of attack that must catch each env, and the strategies that belong to each class.
CLASSES: dict[str, tuple[str, ...]] = {
    "answer": ("hedge", "repeated-tags", "spray", "wrong-answer"),
    "format": ("format-fill", "degenerate"),
    "padding": ("pad",),
    "multi-turn": ("multi-turn", "stall"),
    "quote": ("quote", "echo"),
    "commands": ("commands",),
    "typed-dummy": ("typed-dummy",),
    "gold-leak": ("gold-leak",),
    "lax-grader": ("special-values", "near-gold", "abstain"),
    "program": ("print-spray", "forge-files", "patch-harness", "crash-skip", "typed-dummy"),
}
CORPUS: list[tuple[type, str]] = [
    (SumAnywhere, "answer"), (CapitalAnyPart, "answer"), (ClosureTokens, "answer"), (PartialTolerance, "answer"),
    (LetterAnywhere, "answer"), (MirrorPrefix, "answer"), (JsonListAnswer, "answer"), (AnyKeyJson, "answer"),
    (ThinkFormatPaid, "format"), (LegacyJson, "format"), (BoxedLegacy, "format"), (EmptyLabel, "format"),
    (HashesAnything, "format"), (ColorGameTag, "format"),
    (EffortReward, "padding"), (VerboseStory, "padding"), (LongThoughts, "padding"), (EssayWords, "padding"),
    (SlowGraderPays, "padding"), (DetailBonus, "padding"),
    (SecondTryPaid, "multi-turn"), (SprintMaze, "multi-turn"), (RevisitBonus, "multi-turn"), (ConfirmedGuess, "multi-turn"),
    (PityPrize, "multi-turn"), (RateLimitBug, "multi-turn"), (StallPays, "multi-turn"), (ClockOutPays, "multi-turn"),
    (QuestionOverlap, "quote"), (OptionSentence, "quote"), (GroundedTitle, "quote"), (InPassage, "quote"),
    (WordsFromPrompt, "quote"),
    (SkipCounts, "commands"), (SaveLoadScum, "commands"), (UndoRefund, "commands"), (ToolCallPaid, "format"),
    (SubmitEmpty, "commands"),
    (HintSaysIt, "gold-leak"), (DebugInfo, "gold-leak"), (StatusLine, "gold-leak"), (ResetMeta, "gold-leak"),
    (PeekCommand, "gold-leak"), (CloseCall, "gold-leak"),
    (PrimesEmpty, "typed-dummy"), (DedupeEcho, "typed-dummy"), (SortedPermutation, "typed-dummy"),
    (NoneAccepted, "typed-dummy"), (ZeroVowels, "typed-dummy"), (ReversedRotate, "typed-dummy"),
    (NanTolerance, "lax-grader"), (RelativeTolerance, "lax-grader"), (EvalAnswer, "lax-grader"), (DigitPrefix, "lax-grader"),
    (SuffixMatch, "lax-grader"), (IDontKnowPaid, "lax-grader"),
    (OutputContains, "program"), (ResultFile, "program"), (ReprPatched, "program"), (NanClose, "program"),
    (SkipCrashes, "program"),
]
# ten more, written by an author who had not seen the prober (tests/checks/corpus_blind.py)
CORPUS += [(cls, _blind.KLASS[cls.__name__]) for cls, _ in _blind.HOLES]
# seven more, a second set written the same way (tests/checks/corpus_blind2.py)
CORPUS += [(cls, _blind2.KLASS[cls.__name__]) for cls, _ in _blind2.HOLES]


def options(cls: type) -> dict[str, Any]:
    """How each env is validated: one seed for the ones that run programs (each run is a sandbox)."""
    return {"seeds": [0]} if issubclass(cls, (_Tests, _Runner)) else {}


def caught_by(report: Any, klass: str) -> bool:
    return any(f.strategy in CLASSES[klass] for f in report.findings)


def recall() -> dict[str, tuple[int, int]]:
    """Per class: (planted holes caught by that class, planted holes)."""
    from gem.checks import validate

    out: dict[str, tuple[int, int]] = {}
    for cls, klass in CORPUS:
        report = validate(cls(), **options(cls))
        hit, total = out.get(klass, (0, 0))
        out[klass] = (hit + caught_by(report, klass), total + 1)
    return out


def recall_table(counts: dict[str, tuple[int, int]]) -> str:
    """The markdown table docs/validate.md shows."""
    rows = ["| class | planted holes | caught |", "| --- | --- | --- |"]
    for klass in CLASSES:
        hit, total = counts.get(klass, (0, 0))
        rows.append(f"| {klass} | {total} | {hit} |")
    hit = sum(h for h, _ in counts.values())
    total = sum(t for _, t in counts.values())
    rows.append(f"| all | {total} | {hit} |")
    return "\n".join(rows)


if __name__ == "__main__":  # python -m tests.checks.corpus: the table for docs/validate.md
    import warnings

    warnings.simplefilter("ignore")
    print(recall_table(recall()))

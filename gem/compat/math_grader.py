"""``gem.utils.math_grader``, the original GEM's math grader module (this module is what that path
imports, see :mod:`gem.compat.aliases`).

Its own names are the original's helpers (``grade``, ``grade_answer_sympy``, ``grade_answer_mathd``,
``extract_answer``, ``answer_tag_reward_fn``, ``run_with_timeout_signal``, ...), with the same
signatures and return types as gem-llm's, built on :mod:`gem.grading`. Every other name of
:mod:`gem.grading.math_pool` (the worker pool: :class:`MathGrader`, ``grade_math``, ``grade_answer``,
``boxed_reward_fn``, ``GradeResult``) and :mod:`gem.grading.math_answers` (the fast exact paths),
private helpers included, reads through to those modules, as when the three were one module. Its
former home, ``gem.utils.math_grader_compat``, is this module too.
"""

from __future__ import annotations

import logging
import math
import re
import signal
import threading
from typing import Any, Optional

from gem.utils import parsing
from gem.utils.parsing import extract_last_boxed_answer
from gem.grading import math_answers as _math_answers
from gem.grading import math_pool as _math_pool
from gem.grading.math_answers import _INT, _SLASH, _value, fast_verdict, normalize_string
from gem.grading.math_pool import (  # noqa: F401  (names of gem.utils.math_grader)
    DEFAULT_TIMEOUT_S,
    GradeResult,
    Gold,
    MathGrader,
    boxed_reward_fn,
    default_grader,
    grade_answer,
    grade_response,
    parse_number,
)

logger = logging.getLogger("gem.utils.math_grader")

# Same names, signatures and return types as gem-llm's gem.utils.math_grader; the implementations
# are this module's. The envs grade with MathGrader.judge (never in the caller's process); these
# helpers are for user code. ``fast=True`` in ``grade`` stays in this process (string and sympy
# checks, guarded against expressions that make sympy hang); ``fast=False`` adds math-verify in
# the worker pool.

# Words that follow a number as its unit in word-problem answers (dropped by the mathd normalization).
unit_texts: list[str] = [
    "degree", "mile", "mph", "km", "kmph", "kmh", "meter", "metre", "cm", "mm", "ft", "feet", "foot",
    "inch", "inches", "yard", "hour", "hr", "minute", "min", "second", "sec", "day", "week", "month",
    "year", "yr", "dollar", "cent", "rupee", "rs", "percent", "gallon", "liter", "litre", "pound", "lb",
    "kg", "gm", "acre", "sq", "square", "cubic", "unit", "point", "way", "student", "people",
]
unit_texts.extend([t + "s" for t in unit_texts if not t.endswith("s")])

# (before, after) replacements and expressions removed by normalize_final_answer.
SUBSTITUTIONS: list[tuple[str, str]] = [
    ("an ", ""), ("a ", ""), (".$", "$"), ("\\$", ""), ("\\ ", ""), (" ", ""), ("mbox", "text"),
    (",\\text{and}", ","), ("\\text{and}", ","), ("\\text{m}", "\\text{}"),
]
REMOVED_EXPRESSIONS: list[str] = [
    "square", "ways", "integers", "dollars", "mph", "inches", "ft", "hours", "km", "units", "\\ldots",
    "points", "feet", "minutes", "digits", "cents", "degrees", "cm", "gm", "pounds", "meters", "meals",
    "edges", "students", "multiples", "\\text{s}", "\\text{.}", "\\text{}^2", "\\text{}^3",
    "\\text{}", "\\mathrm{th}", "^\\circ", "^{\\circ}", "\\;", ",\\!", "{,}", '"', "\\dots",
]
# Expressions sympy is not asked to evaluate (powers of powers can run for ever).
BAD_SUBSTRINGS: list[str] = ["^{", "^("]
BAD_REGEXES: list[str] = [r"\^[0-9]+\^", r"\^[0-9][0-9]+"]
TUPLE_CHARS = "()[]"
_REPEAT_SCAN_CHARS = 4096


def mathd_normalize_answer(answer: Optional[str]) -> Optional[str]:
    """The MATH dataset's string normalization (``\\text{}`` unwrapped, spacing and LaTeX variants)."""
    if answer is None:
        return None
    text = answer.strip()
    m = re.fullmatch(r"\\text\{(.+?)\}", text)
    if m:
        text = m.group(1).strip()
    text = normalize_string(text).replace("\\frac", "frac").replace("frac", "\\frac")
    if text.startswith("0.") is False and text.startswith("."):
        text = "0" + text
    return text


def normalize_final_answer(final_answer: str) -> str:
    """Minerva's normalization of a final answer (units and formatting dropped, ``$``/box unwrapped)."""
    text = final_answer
    for before, after in SUBSTITUTIONS:
        text = text.replace(before, after)
    for expr in REMOVED_EXPRESSIONS:
        text = text.replace(expr, "")
    m = re.search(r"\$(.*?)\$", text)
    if m:
        text = m.group(1)
    for cmd in ("text", "textbf", "overline"):
        text = re.sub(r"\\" + cmd + r"\{(.*?)\}", r"\1", text)
    boxed = extract_last_boxed_answer(text)
    if boxed is not None:
        text = boxed
    text = re.sub(r"frac([^{])(.)", r"frac{\1}{\2}", text)
    text = re.sub(r"sqrt([^{])", r"sqrt{\1}", text)
    text = text.replace("$", "")
    if text.replace(",", "").isdigit():
        text = text.replace(",", "")
    return text


def repeatness(s: str) -> bool:
    """Whether ``s`` is mostly repetition: the summed longest common prefixes of its sorted suffixes
    exceed a fifth of the maximum (only the first 4096 characters are scanned)."""
    s = s[:_REPEAT_SCAN_CHARS]
    n = len(s)
    if n <= 1:
        return False
    order = sorted(range(n), key=lambda i: s[i:])
    total = 0
    for a, b in zip(order, order[1:]):
        k = 0
        while a + k < n and b + k < n and s[a + k] == s[b + k]:
            k += 1
        total += k
    return total * 2 / (n * (n + 1)) > 0.2


class TimeoutException(Exception):
    """Raised inside a call that ``run_with_timeout_signal`` interrupts."""


class timeout:  # noqa: N801  (the original's name)
    """``with timeout(seconds):`` raises ``TimeoutError`` after ``seconds`` (``SIGALRM``: main thread only)."""

    def __init__(self, seconds: int = 1, error_message: str = "Timeout") -> None:
        self.seconds = seconds
        self.error_message = error_message

    def handle_timeout(self, signum: int, frame: Any) -> None:
        raise TimeoutError(self.error_message)

    def __enter__(self) -> None:
        signal.signal(signal.SIGALRM, self.handle_timeout)
        signal.alarm(max(1, int(math.ceil(self.seconds))))

    def __exit__(self, *exc: Any) -> None:
        signal.alarm(0)


def run_with_timeout_signal(
    func: Any,
    args: tuple[Any, ...] = (),
    kwargs: Optional[dict[str, Any]] = None,
    timeout_seconds: int = 5,
) -> Optional[Any]:
    """``func(*args, **kwargs)``, or ``None`` if it raised or ran past ``timeout_seconds``.

    Uses ``SIGALRM``, so it interrupts only in the main thread; from another thread the call runs
    without a limit (use :class:`MathGrader` for a deadline that works anywhere).
    """
    kwargs = kwargs or {}
    in_main = threading.current_thread() is threading.main_thread()

    def _expire(signum: int, frame: Any) -> None:
        raise TimeoutException("Function call timed out")

    old = signal.signal(signal.SIGALRM, _expire) if in_main else None
    if in_main:
        signal.alarm(max(1, int(math.ceil(timeout_seconds))))
    try:
        return func(*args, **kwargs)
    except TimeoutException:
        logger.warning("Function timed out after %s seconds.", timeout_seconds)
        return None
    except Exception as exc:  # noqa: BLE001 -- the original returns None for any failure
        logger.warning("Function raised an exception: %s", exc)
        return None
    finally:
        if in_main:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)


def latex_eval(latex: str) -> tuple[Any, Any]:
    """``(sympy expression, its numerical value)`` of a LaTeX string."""
    from latex2sympy2_extended import latex2sympy

    sym = latex2sympy(latex)
    return sym, sym.evalf()


def numeric_equal(prediction: float, reference: float) -> bool:
    """Equal within a relative tolerance of 1e-4."""
    return math.isclose(reference, prediction, rel_tol=1e-4)


def _sympy_parse(expr: str) -> Any:
    from sympy.parsing import sympy_parser

    transformations = sympy_parser.standard_transformations + (sympy_parser.implicit_multiplication_application,)
    return sympy_parser.parse_expr(expr.replace("^", "**"), transformations=transformations)


def count_unknown_letters_in_expr(expr: str) -> int:
    """How many different letters ``expr`` uses, not counting ``sqrt`` and ``frac``."""
    return len({c for c in expr.replace("sqrt", "").replace("frac", "") if c.isalpha()})


def should_allow_eval(expr: str) -> bool:
    """Whether sympy may evaluate ``expr``: at most two unknowns and no nested powers."""
    if count_unknown_letters_in_expr(expr) > 2 or len(expr) > 256:
        return False
    if any(bad in expr for bad in BAD_SUBSTRINGS):
        return False
    return not any(re.search(rx, expr) for rx in BAD_REGEXES)


def are_equal_under_sympy(ground_truth_normalized: str, given_normalized: str) -> bool:
    """Whether sympy simplifies the difference of the two (already normalized) answers to 0."""
    expr = f"({ground_truth_normalized})-({given_normalized})"
    if not should_allow_eval(expr):
        return False
    try:
        import sympy

        return sympy.simplify(_sympy_parse(expr)) == 0
    except Exception:  # noqa: BLE001 -- unparseable means not shown equal
        return False


def symbolic_equal(a: Any, b: Any) -> bool:
    """Whether two expressions (LaTeX or plain strings, or sympy objects) are equal symbolically or
    numerically (relative 1e-4)."""

    def parse(x: Any) -> Any:
        if not isinstance(x, str):
            return x
        for parser in (lambda t: latex_eval(t)[0], _sympy_parse):
            try:
                return parser(x)
            except Exception:  # noqa: BLE001
                continue
        return x

    x, y = parse(a), parse(b)
    try:
        if str(x) == str(y) or x == y:
            return True
    except Exception:  # noqa: BLE001
        pass
    try:
        import sympy

        if sympy.simplify(x - y) == 0:
            return True
    except Exception:  # noqa: BLE001
        pass
    try:
        return numeric_equal(float(y.evalf()), float(x.evalf()))
    except Exception:  # noqa: BLE001
        return False


def _plain_normalize(expr: Optional[str]) -> Optional[str]:
    """The normalization ``grade_answer_sympy`` compares (units, ``\\text``, ``$`` and case dropped)."""
    if expr is None:
        return None
    m = re.fullmatch(r"\\text\{(.+?)\}", expr)
    text = m.group(1) if m else expr
    for old, new in (("\\%", ""), ("%", ""), ("\\$", ""), ("$", ""), (" or ", " , "), (" and ", " , "),
                     ("million", "*10^6"), ("billion", "*10^9"), ("trillion", "*10^12")):
        text = text.replace(old, new)
    text = re.sub(r"(degree|cm|centimeter|meter|mile|second|minute|hour|day|week|month|year|foot|feet|inch|yard)"
                  r"(es)?(s)? *(\^[0-9]+)?", "", text)
    text = re.sub(r"\^ *\\circ", "", text)
    if len(text) > 1 and text[0] == "{" and text[-1] == "}":
        text = text[1:-1]
    text = re.sub(r",\\! *", "", text)
    text = normalize_string(text)
    for old, new in (("\\frac", ""), ("\\sqrt", "sqrt"), ("\\pi", "pi"), ("\\infty", "oo"), ("\\cdot", "*"),
                     ("\\times", "*")):
        text = text.replace(old, new)
    text = re.sub(r"\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", text) if "frac" not in text else text
    text = text.replace("{", "").replace("}", "").lower()
    value = _value(text)
    if value is not None and value.denominator == 1 and not _SLASH.fullmatch(text):
        text = str(value.numerator)
    return text


def split_tuple(expr: str) -> list[str]:
    """The elements of a tuple or interval (``(1,2]`` -> ``["1", "2"]``); other answers as one element."""
    expr = re.sub(r"(\d),(\d\d\d)(?=$|\D)", r"\1\2", expr)
    if not expr:
        return []
    if len(expr) > 2 and expr[0] in TUPLE_CHARS and expr[-1] in TUPLE_CHARS and not any(
        c in expr[1:-1] for c in TUPLE_CHARS
    ):
        return [e.strip() for e in expr[1:-1].split(",")]
    return [expr]


def grade_answer_mathd(given_answer: str, ground_truth: str) -> bool:
    """Equal after the MATH dataset's string normalization."""
    return mathd_normalize_answer(ground_truth) == mathd_normalize_answer(given_answer)


def grade_answer_sympy(given_answer: str, ground_truth: str) -> bool:
    """Equal after normalization, element by element for tuples and intervals; integers and
    unreduced fractions must match exactly, other elements may be shown equal by sympy."""
    gold, given = _plain_normalize(ground_truth), _plain_normalize(given_answer)
    if gold is None or given is None:
        return False
    if gold == given:
        return True
    if not given:
        return False
    gold_elems, given_elems = split_tuple(gold), split_tuple(given)
    if len(gold_elems) != len(given_elems):
        return False
    if len(gold_elems) > 1 and (gold[0], gold[-1]) != (given[0], given[-1]):
        return False
    for g, p in zip(gold_elems, given_elems):
        g_int, p_int = _INT.fullmatch(g) is not None, _INT.fullmatch(p) is not None
        if _SLASH.fullmatch(g) and _SLASH.fullmatch(p):
            ok = g == p
        elif g_int or p_int:
            ok = g_int and p_int and int(g) == int(p)
        else:
            ok = are_equal_under_sympy(g, p)
        if not ok:
            return False
    return True


def is_value_equal(given_answer: str, ground_truth: str) -> bool:
    """Equal as normalized strings or as floats."""
    gold, given = mathd_normalize_answer(ground_truth), mathd_normalize_answer(given_answer)
    if gold == given:
        return True
    try:
        return float(gold) == float(given)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def is_latex_equal(given_answer: str, ground_truth: str) -> bool:
    """Equal under math-verify (run in the grader's worker pool, with its deadline)."""
    if (len(given_answer) > 128 and repeatness(given_answer)) or (len(ground_truth) > 128 and repeatness(ground_truth)):
        return False
    return grade_answer(given_answer, ground_truth)


def last_boxed_only_string(string: str) -> Optional[str]:
    """The last ``\\boxed{...}`` (or ``\\fbox{...}``) of ``string``, braces included; ``None`` if none."""
    return parsing.last_boxed_only_string(string)


def remove_boxed(s: Optional[str]) -> Optional[str]:
    """``\\boxed{x}`` -> ``x``; ``None`` for anything else."""
    return parsing.remove_boxed(s)


def extract_boxed_answer(solution: str) -> Optional[str]:
    """The content of the last ``\\boxed{}`` (``None`` if there is none)."""
    return remove_boxed(last_boxed_only_string(solution))


def extract_answer(passage: str) -> Optional[str]:
    """The content of the last ``\\boxed{}`` of a response, or ``None`` if it has none."""
    return extract_boxed_answer(passage) if "\\boxed" in passage else None


def grade(model_answer: str, gt_answer: str, fast: bool = True) -> bool:
    """Whether an extracted answer equals the gold one: string, number, mathd and sympy checks in
    this process; ``fast=False`` adds math-verify (in the worker pool)."""
    if "\\boxed" in gt_answer:
        gt_answer = extract_answer(gt_answer) or gt_answer
    if fast_verdict(model_answer, gt_answer):
        return True
    if grade_answer_mathd(model_answer, gt_answer) or grade_answer_sympy(model_answer, gt_answer):
        return True
    return False if fast else is_latex_equal(model_answer, gt_answer)


def _grade_golds(model_answer: str, gt_answer: Any, fast: bool) -> bool:
    golds = gt_answer if isinstance(gt_answer, list) else [gt_answer]
    return any(grade(model_answer, str(g), fast) for g in golds if g is not None)


def r1_distill_qwen_math_reward_fn(
    model_response: str, gt_answer: Gold, fast: bool = False, correct_reward: float = 1.0,
    incorrect_reward: float = 0.0,
) -> tuple[dict[str, Any], float]:
    """``boxed_reward_fn`` on the text after the one ``</think>``; unformatted without exactly one."""
    parts = model_response.split("</think>")
    if len(parts) != 2:
        return {"formatted": False}, 0.0
    return boxed_reward_fn(parts[1], gt_answer, fast, correct_reward, incorrect_reward)


def _answer_tag_reward(
    model_response: str, gt_answer: Gold, fast: bool, correct_reward: float, incorrect_reward: float, opening: str
) -> tuple[dict[str, Any], float]:
    if opening not in model_response or "</answer>" not in model_response:
        return {"formatted": False}, incorrect_reward
    answer = model_response.split("<answer>")[-1].replace("</answer>", "")
    if "\\boxed" in answer:
        answer = extract_answer(answer)
        if answer is None:
            return {"formatted": True}, incorrect_reward
    correct = _grade_golds(answer, gt_answer, fast)
    return {"formatted": True}, correct_reward if correct else incorrect_reward


def answer_tag_reward_fn(
    model_response: str, gt_answer: Gold, fast: bool = False, correct_reward: float = 1.0,
    incorrect_reward: float = 0.0,
) -> tuple[dict[str, Any], float]:
    """Strict format: ``</think> <answer>...</answer>``; the answer (or its box) is graded."""
    return _answer_tag_reward(model_response, gt_answer, fast, correct_reward, incorrect_reward, "</think> <answer>")


def answer_tag_reward_fn_for_orz(
    model_response: str, gt_answer: Gold, fast: bool = False, correct_reward: float = 1.0,
    incorrect_reward: float = 0.0,
) -> tuple[dict[str, Any], float]:
    """As :func:`answer_tag_reward_fn`, needing only ``<answer>...</answer>``."""
    return _answer_tag_reward(model_response, gt_answer, fast, correct_reward, incorrect_reward, "<answer>")


def __getattr__(name: str) -> Any:
    """Every other name of the grading modules (``HARD_LIMIT_FACTOR``, ``_Zygote``, ``_value``, ...)."""
    for module in (_math_pool, _math_answers):
        if name in vars(module) and not name.startswith("__"):
            return vars(module)[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    names = set(globals()) | set(vars(_math_pool)) | set(vars(_math_answers))
    return sorted(n for n in names if not n.startswith("__") or n in ("__all__", "__doc__", "__name__"))


__all__ = [
    "BAD_REGEXES", "BAD_SUBSTRINGS", "DEFAULT_TIMEOUT_S", "GradeResult", "MathGrader", "REMOVED_EXPRESSIONS",
    "SUBSTITUTIONS", "TUPLE_CHARS", "TimeoutException", "answer_tag_reward_fn", "answer_tag_reward_fn_for_orz",
    "are_equal_under_sympy", "boxed_reward_fn", "count_unknown_letters_in_expr", "default_grader", "extract_answer",
    "extract_boxed_answer", "fast_verdict", "grade", "grade_answer", "grade_answer_mathd", "grade_answer_sympy",
    "grade_response", "is_latex_equal", "is_value_equal", "last_boxed_only_string", "latex_eval",
    "mathd_normalize_answer", "normalize_final_answer", "normalize_string", "numeric_equal", "parse_number",
    "r1_distill_qwen_math_reward_fn", "remove_boxed", "repeatness", "run_with_timeout_signal", "should_allow_eval",
    "split_tuple", "symbolic_equal", "timeout", "unit_texts",
]

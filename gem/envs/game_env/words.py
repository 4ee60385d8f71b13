"""English word lists for the word games (Wordle, Hangman, WordSearch).

The words come from two PyPI packages that ship their data, so nothing is downloaded at run time:
``wordfreq`` ranks words by how often they are used, and ``english-words`` (Webster's Second
International, ``web2``) says which strings are dictionary words. A word is *listed* when it is among
wordfreq's 60,000 most frequent English words, is plain lowercase ASCII letters, is a lowercase
``web2`` entry (which drops names, plurals and past tenses) and is a ``gcide`` headword, and is not on
a short list of offensive words. Listed words keep wordfreq's order (most frequent first).

Tiers: ``"common"`` is the first :data:`COMMON_RANK` listed words, ``"rare"`` the rest. Guesses are
checked against the larger :func:`is_word` dictionary (all of ``web2`` plus wordfreq's frequent words,
inflections included). Everything is loaded once per process (immutable tuples and frozensets behind a
lock); envs keep only the tier and length they draw from, never the lists themselves.
"""

from __future__ import annotations

import logging
import threading
from typing import Literal

from gem.errors import missing_extra

logger = logging.getLogger(__name__)

Tier = Literal["common", "rare", "all"]
TIERS: tuple[str, ...] = ("common", "rare", "all")

TOP_N = 60_000  # how deep into wordfreq's ranking words are drawn from
COMMON_RANK = 9_000  # listed words ranked below this are "common"

# Words never drawn as answers (slurs, sexual and crude words that survive the dictionary filters).
_BLOCKED = frozenset(
    """
    ass arse bastard bitch bollock boob booby butt cock coon crap cum damn dick dyke fag faggot fuck
    gay hell homo horny jap kike nazi nigger penis piss porn prick pussy rape raped rapist retard screw
    screwing sex sexy shit slut spic tit tits turd twat vagina vaginal whore wank
    """.split()
)

_lock = threading.Lock()
_listed: tuple[str, ...] = ()
_dictionary: frozenset[str] = frozenset()
_by_key: dict[tuple[str, int], tuple[str, ...]] = {}


def _import_sources():  # type: ignore[no-untyped-def]
    try:
        import wordfreq
        from english_words import get_english_words_set
    except ImportError as exc:
        raise missing_extra("Each word game", "games", "wordfreq and english-words") from exc
    return wordfreq, get_english_words_set


def _load() -> None:
    """Build the listed words and the guess dictionary (once per process)."""
    global _listed, _dictionary
    with _lock:
        if _listed:
            return
        wordfreq, get_set = _import_sources()
        web2 = {w for w in get_set(["web2"], lower=False, alpha=True) if w.islower() and w.isascii()}
        gcide = get_set(["gcide"], lower=True, alpha=True)
        ranked = [w for w in wordfreq.top_n_list("en", TOP_N) if w.isascii() and w.isalpha() and w.islower()]
        listed = tuple(w for w in ranked if w in web2 and w in gcide and w not in _BLOCKED)
        _dictionary = frozenset(web2) | frozenset(ranked)
        _listed = listed
        logger.debug("loaded %d listed words and a %d-word dictionary", len(listed), len(_dictionary))


def listed_words() -> tuple[str, ...]:
    """Every listed word, most frequent first."""
    _load()
    return _listed


def words(length: int, tier: Tier = "common") -> tuple[str, ...]:
    """Listed words of ``length`` letters in ``tier``, most frequent first (lowercase)."""
    if tier not in TIERS:
        raise ValueError(f"Unknown word tier {tier!r}; valid tiers: {', '.join(TIERS)}.")
    key = (tier, length)
    found = _by_key.get(key)
    if found is not None:
        return found
    listed = listed_words()
    pool = listed[:COMMON_RANK] if tier == "common" else listed[COMMON_RANK:] if tier == "rare" else listed
    result = tuple(w for w in pool if len(w) == length)
    with _lock:
        _by_key[key] = result
    return result


def words_between(min_length: int, max_length: int, tier: Tier = "common") -> tuple[str, ...]:
    """Listed words of ``min_length`` to ``max_length`` letters in ``tier`` (cached)."""
    key = (f"{tier}:{min_length}-{max_length}", 0)
    found = _by_key.get(key)
    if found is None:
        found = tuple(w for n in range(min_length, max_length + 1) for w in words(n, tier))
        with _lock:
            _by_key[key] = found
    return found


def is_word(word: str) -> bool:
    """Whether ``word`` (any case) is in the guess dictionary."""
    if not _dictionary:  # loaded once; later calls skip the lock
        _load()
    return word.lower() in _dictionary


def require_words(length: int, tier: Tier = "common", minimum: int = 1) -> tuple[str, ...]:
    """``words(length, tier)``, raising ``ValueError`` when fewer than ``minimum`` exist."""
    found = words(length, tier)
    if len(found) < minimum:
        raise ValueError(
            f"Only {len(found)} {tier} words have {length} letters (need {minimum}); choose a length "
            "between 3 and 9."
        )
    return found

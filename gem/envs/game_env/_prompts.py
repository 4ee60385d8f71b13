"""How the games ask for a move: once per prompt, and never after the game is over.

A game's prompt is its observation plus ``info["suffix"]`` (joined by
:func:`gem.utils.prompting.user_content`, which leaves out a suffix the observation already ends
with). So that a model is never told two things at once:

- the first prompt asks for the *first* move (:func:`first_request`), once;
- a later prompt asks for the *next* move, once;
- a step that ends the game has the suffix :data:`GAME_OVER_SUFFIX`, which asks for nothing.
"""

from __future__ import annotations

GAME_OVER_SUFFIX = ""


def first_request(next_request: str) -> str:
    """The request of the first prompt: ``"Enter your next guess."`` -> ``"Enter your first guess."``."""
    return next_request.replace(" next ", " first ", 1)

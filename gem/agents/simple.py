"""Agents that need no model: random, solver and a person at the terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from gem.agents.base import Agent
from gem.utils.prompting import user_content

if TYPE_CHECKING:
    from gem.core import Env


class RandomAgent(Agent):
    """Plays ``env.sample_random_action()`` every turn."""

    def __init__(self, env: "Env") -> None:
        self.env = env

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        return self.env.sample_random_action()


class SolverAgent(Agent):
    """Plays the env's own solver (``env.make_solver()``), rebuilt for every episode."""

    def __init__(self, env: "Env") -> None:
        self.env = env
        self.solver: Optional[Agent] = None

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        self.solver = self.env.make_solver()
        self.solver.reset(observation, info)

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        if self.solver is None:
            raise RuntimeError("SolverAgent.act() before reset().")
        return self.solver.act(observation, info)


# Action formats a person may leave out when typing a move: (marker in the instructions, open, close).
# The env's instructions name its format; the one named first is used.
MOVE_FORMATS = (
    ("\\boxed", "\\boxed{", "}"),
    ("<answer>", "<answer>", "</answer>"),
    ("<bash>", "<bash>", "</bash>"),  # terminal and SWE tasks: a bare command is run
    ("```python", "```python\n", "\n```"),  # code tasks: a bare line is the program
)
# What a person types to ask for help or to stop, instead of a move.
HELP_COMMAND, QUIT_COMMAND = ":help", ":quit"
# Bare words that look like a request for help or a way out: never sent as a move by mistake.
HELP_WORDS = ("help", "?", "h")
QUIT_WORDS = ("quit", "exit", "q")


def move_format(instructions: str) -> Optional[tuple[str, str]]:
    """The ``(open, close)`` of the action format ``instructions`` ask for (the one they name
    first), if one is known."""
    found = [(instructions.find(marker), opening, closing) for marker, opening, closing in MOVE_FORMATS]
    found = [f for f in found if f[0] >= 0]
    if not found:
        return None
    _, opening, closing = min(found)
    return opening, closing


def complete_move(line: str, fmt: Optional[tuple[str, str]]) -> str:
    """``line`` in the format ``fmt`` (``5`` -> ``\\boxed{5}``, ``ls`` -> ``<bash>ls</bash>``); left
    alone if already in it, or if it is another tag action of a tag format (``<done/>``)."""
    move = line.strip()
    if fmt is None or not move or fmt[0].strip() in move:
        return line
    if fmt[0].startswith("<") and move.startswith("<"):
        return line
    return f"{fmt[0]}{move}{fmt[1]}"


def help_text(fmt: Optional[tuple[str, str]]) -> str:
    """What ``:help`` shows a person playing in the terminal."""
    lines = ["Type your move and press Enter."]
    if fmt is not None:
        example = f"{fmt[0]}MOVE{fmt[1]}".replace("\n", " ")
        lines.append(f"A move typed without the env's format is put in it: MOVE becomes {example}.")
    lines.append(f"{HELP_COMMAND}  show this help (nothing is sent to the env)")
    lines.append(f"{QUIT_COMMAND}  end the episode now")
    return "\n".join(lines)


# Formats whose bare lines are answers, not commands: wrapping a non-answer in them makes a format error.
ANSWER_FORMATS = (("\\boxed{", "}"), ("<answer>", "</answer>"))


def format_error_check(env: "Env") -> Optional[Callable[[str], Optional[str]]]:
    """A check for :class:`HumanAgent`: steps a copy of ``env`` (``spawn(same_state=True)``) with a move
    and returns what the env would answer if the move is a format error (the reward
    ``format_error_reward``), else ``None``; the env itself is not stepped.

    ``None`` (no check) where a format error cannot be told from another outcome by its reward (the
    env pays the same for it as for a step, a loss or an invalid move).
    """
    inner = getattr(env, "unwrapped", env)
    try:
        penalty = float(inner.format_error_reward)
        others = {float(getattr(inner, k)) for k in ("internal_step_reward", "invalid_action_reward", "fail_reward")}
    except (AttributeError, TypeError, ValueError):
        return None
    if penalty in others:
        return None

    def check(move: str) -> Optional[str]:
        try:
            probe = env.spawn(same_state=True)
        except Exception:  # an env that cannot be copied: the move goes to the env as typed
            return None
        try:
            observation, reward, _, _, _ = probe.step(move)
        except Exception:
            return None
        return str(observation) if float(reward) == penalty else None

    return check


class HumanAgent(Agent):
    """A person at the terminal: shows each observation and reads the action from ``read``.

    A move typed without the action format the env asks for (``1 4 4`` where the instructions
    say ``\\boxed{}``, ``ls`` where they say ``<bash>COMMAND</bash>``) is put in it, and ``tell``
    (if given) says what was taken. ``:help`` shows how to play and ``:quit`` ends the episode
    (:class:`~gem.rollout.StopEpisode`); neither is sent to the env, nor is a bare ``help`` or
    ``quit`` (the person is told how to send it as a move).

    ``check(move)`` (``gem play`` passes :func:`format_error_check`) is asked about a move that was
    put in an answer format (``\\boxed{}``, ``<answer>``): if it returns a message, the move is a
    format error and is not sent; the person is told why and types again. A move typed in the format
    already is sent as it is.
    """

    def __init__(
        self,
        read: Callable[[str], str] = input,
        show: Optional[Callable[[str], None]] = None,
        tell: Optional[Callable[[str], None]] = None,
        check: Optional[Callable[[str], Optional[str]]] = None,
    ) -> None:
        self.read = read
        self.show = show
        self.tell = tell
        self.check = check
        self.format: Optional[tuple[str, str]] = None

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        self.format = move_format(user_content(observation, info))

    def _say(self, text: str) -> None:
        if self.tell is not None:
            self.tell(text)

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        from gem.rollout import StopEpisode

        text = user_content(observation, info)
        if self.format is None:
            self.format = move_format(text)
        if self.show is not None:
            self.show(text)
        while True:
            line = self.read("> ")
            word = line.strip().lower()
            if word == HELP_COMMAND:
                self._say(help_text(self.format))
                continue
            if word == QUIT_COMMAND:
                raise StopEpisode("the player quit")
            if word in HELP_WORDS or word in QUIT_WORDS:
                as_move = complete_move(line.strip(), self.format)
                self._say(f"(not sent: type {HELP_COMMAND} for help, {QUIT_COMMAND} to stop, or {as_move} "
                          "to send it as a move)")
                continue
            move = complete_move(line, self.format)
            if move != line and self.check is not None and self.format in ANSWER_FORMATS:
                problem = self.check(move)
                if problem is not None:
                    self._say(
                        f"(not sent: {line.strip()!r} is not a move here. As {move} it would be a format "
                        f"error, and the env would answer:\n  {problem.strip()}\nType another move, "
                        f"{HELP_COMMAND} for help or {QUIT_COMMAND} to stop.)"
                    )
                    continue
            break
        if move != line:
            self._say(f"(taken as {move})")
        return move

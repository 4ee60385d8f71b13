"""The messages of GEM's OpenEnv interface: a text action, a text observation, the state.

Field for field what ``openenv-core`` declares for an ``Action``/``Observation``/``State`` (a
``metadata`` dict on each, ``done``/``reward`` on observations, ``episode_id``/``step_count`` on the
state), with GEM's text on top. Only pydantic is needed (FastAPI's own dependency), so a GEM server
speaks OpenEnv without openenv-core installed; the tests check these against openenv-core's models.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

# OpenEnv's WebSocket error codes (openenv.core.env_server.types.WSErrorCode), as sent on the wire.
INVALID_JSON = "INVALID_JSON"
UNKNOWN_TYPE = "UNKNOWN_TYPE"
VALIDATION_ERROR = "VALIDATION_ERROR"
EXECUTION_ERROR = "EXECUTION_ERROR"
CAPACITY_REACHED = "CAPACITY_REACHED"
FACTORY_ERROR = "FACTORY_ERROR"
SESSION_ERROR = "SESSION_ERROR"


class TextAction(BaseModel):
    """What the agent sends: its text (GEM's action string)."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="The agent's action: any text (GEM's step(action))")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Additional metadata for the action")


class TextObservation(BaseModel):
    """What the env answers: its text, the reward of the last action, whether the episode ended.

    ``metadata`` holds GEM's ``info`` and the two end flags, ``terminated`` and ``truncated``
    (``done`` is their "or").
    """

    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="The observation (GEM's observation string)")
    done: bool = Field(default=False, description="Whether the episode has ended")
    reward: Union[bool, int, float, None] = Field(default=None, description="Reward of the last action")
    metadata: dict[str, Any] = Field(default_factory=dict, description="GEM's info, terminated and truncated")


class TextState(BaseModel):
    """A session's state: OpenEnv's ``episode_id``/``step_count`` and which GEM id it plays."""

    model_config = ConfigDict(extra="allow")

    episode_id: Optional[str] = Field(default=None, description="Unique identifier for the current episode")
    step_count: int = Field(default=0, ge=0, description="Number of steps taken in the current episode")
    env_id: Optional[str] = Field(default=None, description="The GEM id this session plays")
    seed: Optional[int] = Field(default=None, description="The seed of the current episode, if one was given")


class ResetData(BaseModel):
    """A reset's parameters: OpenEnv's ``seed`` and ``episode_id``, and GEM's ``env_id`` and ``kwargs``.

    Other fields are allowed and ignored, as OpenEnv passes on only what ``reset`` takes.
    """

    model_config = ConfigDict(extra="allow")

    seed: Optional[int] = Field(default=None, ge=0, description="Seed of the episode (the same seed, the same episode)")
    episode_id: Optional[str] = Field(default=None, max_length=255, description="Custom episode identifier")
    env_id: Optional[str] = Field(default=None, description="Which served GEM id to play (needed if several)")
    kwargs: Optional[dict[str, Any]] = Field(default=None, description="The env's constructor kwargs (as declared)")


class StepData(BaseModel):
    """The stateless ``POST /step`` body: OpenEnv's ``action``/``timeout_s``/``request_id``, and the
    GEM episode to step (``seed``, ``env_id``, ``kwargs``: the episode ``POST /reset`` with them shows)."""

    model_config = ConfigDict(extra="allow")

    action: dict[str, Any]
    timeout_s: Optional[float] = Field(default=None, gt=0)
    request_id: Optional[str] = Field(default=None, max_length=255)
    seed: Optional[int] = Field(default=None, ge=0)
    env_id: Optional[str] = None
    kwargs: Optional[dict[str, Any]] = None


def observation_payload(text: str, reward: Optional[float], done: bool, metadata: dict[str, Any]) -> dict[str, Any]:
    """A result as OpenEnv sends it: ``{"observation": {...}, "reward", "done"}``.

    ``metadata`` travels inside the observation dict: openenv-core's own serializer drops it, but
    its clients accept it (``Observation`` declares the field), and GEM's info would be lost otherwise.
    """
    return {"observation": {"text": text, "metadata": metadata}, "reward": reward, "done": bool(done)}

"""The original GEM's module for the thread backend: see :mod:`gem.vector.thread_vector_env`
(``AsyncVectorEnv`` is :class:`~gem.vector.thread_vector_env.ThreadVectorEnv`)."""

from gem.vector.thread_vector_env import SLOW_STEP_SECONDS, AsyncVectorEnv, ThreadVectorEnv, step_reset_env

__all__ = ["SLOW_STEP_SECONDS", "AsyncVectorEnv", "ThreadVectorEnv", "step_reset_env"]

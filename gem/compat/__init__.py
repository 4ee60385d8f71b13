"""What exists only for the original GEM's API (gem-llm 0.1.0 and its main branch).

The main modules are written for this project's API; the pieces here let code written for the
original run unchanged on top of them, and nothing needs to import them by name:

- :mod:`gem.compat.step_guard`: the step contract (a step after the end) for envs whose ``step``
  does not keep it itself; ``Env.__init_subclass__`` calls it once per class.
- :mod:`gem.compat.kwargs`: the constructor kwargs of the original's envs, which ``gem.make``
  accepts for every env (re-exported by ``gem.envs.registration``).
- :mod:`gem.compat.multiagent`: the original's multi-agent subclass contract
  (``_process_actions``); ``MultiAgentEnv`` puts it under such a class when the class is created.
- :mod:`gem.compat.math_grader`: the original's math grader names (also at
  ``gem.utils.math_grader``), built on :mod:`gem.grading`.
- :mod:`gem.compat.fifteen_puzzle`: the original FifteenPuzzle's board as rows (``board``,
  ``goal_board``, ``goal_parity``, ``greatest_num``, ``VALID_INITIALIZATION_ALGOS``) and the helpers
  its tests call (``_move``, ``_is_solvable``, ...): :class:`FifteenPuzzleCompat`, a base of
  ``FifteenPuzzleEnv``.
- :mod:`gem.compat.reasoning_gym`: the original ReasoningGym env's ``ds``/``dataset`` and ``data``:
  :class:`ReasoningGymCompat`, a base of ``ReasoningGymEnv``.
- :mod:`gem.compat.math_env`: the original's ``verify_fn`` (re-exported by ``gem.envs.math_env``)
  and ``MathEnv.check_correct`` (:class:`MathEnvCompat`, a base of ``MathEnv``).
- :mod:`gem.compat.qa_env`: the original's ``QaEnv.check_correct`` (:class:`QaEnvCompat`, a base
  of ``QaEnv``).
- :mod:`gem.compat.mcp_tool`: the original MCPTool's ``get_available_tools``,
  ``_get_server_names`` and ``_is_multi_server`` (:class:`MCPToolCompat`, a base of ``MCPTool``).

A mixin comes first among its class's bases, so the names resolve as when the class defined them;
``tests/compat/test_compat_names.py`` checks that they live here only and act as the original's.

The original's module paths (``gem.utils.math_grader``, ``gem.multiagent`` ...) stay importable.
"""

"""What exists only for the original GEM's API (gem-llm 0.1.0 and its main branch).

The main modules are written for this project's API; the pieces here let code written for the
original run unchanged beside them. None of them is a base class of a main class:

- :mod:`gem.compat.aliases`: the former module paths, one table (old path -> new path) read by the
  import hook that ``import gem`` installs; an old path imports the module at its new path.
- :mod:`gem.compat.attach`: how the original's names reach a main class: a class decorator per
  class copies a table of names onto it (``@fifteen_puzzle_compat``, ``@math_env_compat``, ...).
- :mod:`gem.compat.kwargs`: the constructor kwargs of the original's envs, which ``gem.make``
  accepts for every env (re-exported by ``gem.envs.registration``), and :func:`~gem.compat.kwargs.ignore_kwargs`
  for a constructor that takes some of them only to drop them.
- :mod:`gem.compat.step_guard`: the step contract (a step after the end) for envs whose ``step``
  does not keep it itself; ``Env.__init_subclass__`` calls it once per class.
- :mod:`gem.compat.multiagent`: the original's ``MultiAgentEnv`` (``observe`` and
  ``_process_actions``), at its paths ``gem.multiagent`` and ``gem.envs.multiagent.multi_agent_env``.
- :mod:`gem.compat.math_grader`: ``gem.utils.math_grader``, the original's grader names on
  :mod:`gem.grading`.
- :mod:`gem.compat.sandbox`: ``gem.utils.sandbox``, the original's ``run_python`` tuple form.
- :mod:`gem.compat.debug`: ``gem.utils.debug``, the original's episode printers.
- :mod:`gem.compat.fifteen_puzzle`: the original FifteenPuzzle's board as rows (``board``,
  ``goal_board``, ``goal_parity``, ``greatest_num``, ``VALID_INITIALIZATION_ALGOS``) and the
  helpers its tests call (``_move``, ``_is_solvable``, ...), for ``FifteenPuzzleEnv``.
- :mod:`gem.compat.reasoning_gym`: the original ReasoningGym env's ``ds``/``dataset`` and ``data``.
- :mod:`gem.compat.math_env`: the original's ``verify_fn`` (re-exported by ``gem.envs.math_env``)
  and ``MathEnv.check_correct``; :mod:`gem.compat.qa_env`: ``QaEnv.check_correct``.
- :mod:`gem.compat.mcp_tool`: the original MCPTool's ``get_available_tools``,
  ``_get_server_names`` and ``_is_multi_server``.

``tests/compat/test_compat_names.py`` checks that the names are these modules' and act as the
original's; ``tests/compat/run_original_suite.py`` runs the original's own tests.
"""

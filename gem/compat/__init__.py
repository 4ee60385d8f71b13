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

The original's module paths (``gem.utils.math_grader``, ``gem.multiagent`` ...) stay importable.
"""

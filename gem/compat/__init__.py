"""What exists only for the original GEM's API (gem-llm 0.1.0 and its main branch).

The main modules are written for this project's API; the pieces here let code written for the
original run unchanged on top of them:

- :mod:`gem.compat.step_guard`: the step contract (step after the end) for envs whose ``step`` does
  not keep it itself.

The original's module paths (``gem.utils.math_grader``, ``gem.multiagent`` ...) stay importable;
each re-exports from here or from the module that now holds the code.
"""

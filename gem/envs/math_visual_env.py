"""Math problems with a picture.

``MathVisualEnv`` is :class:`~gem.envs.math_env.MathEnv` over a dataset with an image column
(``axon-rl/geometry3k`` for ``math:Geometry3K``): the observation is the problem text and
``info["images"]`` holds the item's image(s) as the dataset stores them (``PIL`` images from the
hub, paths or encoded strings from a local file). Grading and rewards are MathEnv's. The hub data
needs network on first use; offline, construction raises
:class:`~gem.errors.ResourceUnavailable` saying how to point ``dataset_name`` at a local copy.
"""

from gem.envs.math_env import MathVisualEnv

__all__ = ["MathVisualEnv"]

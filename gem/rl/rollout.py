"""The former path of :mod:`gem.rl.collect` (episodes collected for training).

``Episode`` is :class:`gem.rl.collect.Trajectory` under its former name.
"""

from gem.rl.collect import (
    Generation,
    Policy,
    Trajectory,
    Transition,
    assign_advantages,
    collect_episodes,
    episode_stats,
)

Episode = Trajectory

__all__ = [
    "Episode", "Generation", "Policy", "Trajectory", "Transition", "assign_advantages", "collect_episodes",
    "episode_stats",
]

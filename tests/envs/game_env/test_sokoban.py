import pytest

import gem
from gem.agents import SolverAgent, run_episode
from gem.envs.game_env._sokoban_levels import plan_within, solve
from gem.envs.game_env.sokoban import SokobanEnv, read_level

PRESETS = {"game:Sokoban-v0-easy": ((6, 6), 2, 20), "game:Sokoban-v0-hard": ((8, 8), 4, 50)}
ALL = [*PRESETS, "game:Sokoban-v0-random"]


def _handmade(env, rows):
    """Put the room drawn in ``rows`` (env symbols) into a reset env."""
    text = "Current board:\n" + "\n".join(" ".join(r) for r in rows) + "\n"
    floor, targets, boxes, player = read_level(text)
    env.floor, env.targets, env.boxes, env.player = floor, targets, set(boxes), player
    env.dim_room, env.num_boxes = (len(rows), len(rows[0])), len(boxes)


@pytest.mark.parametrize("env_id", list(PRESETS))
def test_presets_and_first_observation(env_id):
    env = gem.make(env_id)
    obs, info = env.reset(seed=0)
    dim, boxes, turns = PRESETS[env_id]
    assert (tuple(env.dim_room), env.num_boxes, env.max_turns) == (dim, boxes, turns)
    assert f"{turns} turns" in obs and "\\boxed{up}" in obs and "S you standing on a target" in obs
    floor, targets, found_boxes, player = read_level(obs)
    assert (floor, targets, set(found_boxes), player) == (env.floor, env.targets, env.boxes, env.player)
    assert len(obs.split("Current board:\n")[1].split("\n")[0].split()) == dim[1]
    assert "Enter your first move" in info["suffix"]


def test_push_walk_and_illegal_moves():
    env = SokobanEnv(dim_room=(5, 7), num_boxes=2, max_turns=20)
    env.reset(seed=0)
    _handmade(env, ["#######", "#P_XO_#", "#__XX_#", "#O____#", "#######"])
    obs, reward, terminated, _, _ = env.step("\\boxed{up}")
    assert "invalid move" in obs and "wall" in obs and reward == 0.0 and not terminated
    env.step("\\boxed{right}")
    obs, reward, terminated, _, _ = env.step("\\boxed{right}")  # box onto the target
    assert "pushed a box right onto a target" in obs and "P √" in obs and not terminated
    env.boxes, env.player = {(1, 4), (2, 3), (2, 4)}, (2, 2)
    obs, _, terminated, _, _ = env.step("\\boxed{right}")  # two boxes in a row
    assert "blocked by another box" in obs and not terminated and env.player == (2, 2)
    env.boxes, env.player = {(1, 4), (2, 5)}, (2, 4)
    obs, _, _, _, _ = env.step("\\boxed{right}")  # box at (2, 5) is against the wall
    assert "against a wall" in obs


def test_solving_move_wins_and_turn_limit_gives_share():
    env = SokobanEnv(dim_room=(5, 6), num_boxes=2, max_turns=3)
    env.reset(seed=0)
    _handmade(env, ["######", "#P_XO#", "#_X__#", "#O___#", "######"])
    env.step("\\boxed{right}")
    obs, reward, terminated, truncated, info = env.step("\\boxed{right}")
    assert reward == 0.0 and not terminated
    obs, reward, terminated, truncated, info = env.step("\\boxed{left}")
    assert truncated and not terminated and reward == pytest.approx(0.5) and info["success"] is False
    env.reset(seed=0)
    _handmade(env, ["######", "#_PXO#", "######"])
    env.max_turns = 5
    _obs, reward, terminated, truncated, info = env.step("\\boxed{right}")
    assert reward == 1.0 and terminated and not truncated and info["success"] is True


@pytest.mark.parametrize("bad", ["\\boxed{north}", "up", "\\boxed{}", "\\boxed{up up}"])
def test_malformed_move_is_format_error(bad):
    env = gem.make("game:Sokoban-v0-easy")
    env.reset(seed=0)
    _obs, reward, terminated, truncated, info = env.step(bad)
    assert reward == -0.1 and terminated and not truncated and info["success"] is False


@pytest.mark.parametrize("env_id", ALL)
def test_levels_are_unsolved_and_solvable_within_the_turn_limit(env_id):
    env = gem.make(env_id)
    for seed in range(50):
        obs, _ = env.reset(seed=seed)
        floor, targets, boxes, player = read_level(obs)
        assert len(boxes) == len(targets) == env.num_boxes and player in floor and player not in boxes
        assert not boxes <= targets
        assert env.known_solution <= env.max_turns
        assert len(plan_within(floor, targets, boxes, player, env.max_turns)) <= env.max_turns


@pytest.mark.parametrize("env_id", list(PRESETS))
def test_fewest_moves_never_exceed_the_construction(env_id):
    env = gem.make(env_id)
    for seed in range(15):
        obs, _ = env.reset(seed=seed)
        assert len(solve(*read_level(obs))) <= env.known_solution


@pytest.mark.parametrize("env_id", ALL)
def test_solver_wins_every_seed(env_id):
    env = gem.make(env_id)
    agent = SolverAgent(env)
    for seed in range(50):
        episode = run_episode(env, agent, seed=seed)
        assert episode.success and episode.rewards[-1] == 1.0 and episode.turns <= env.max_turns


def test_random_preset_draws_sizes_and_room_size_alias():
    env = gem.make("game:Sokoban-v0-random")
    seen = set()
    for seed in range(30):
        env.reset(seed=seed)
        seen.add((tuple(env.dim_room), env.num_boxes, env.max_turns))
    assert seen == {((6, 6), 2, 20), ((8, 8), 5, 50)}
    assert SokobanEnv(room_size=(7, 7), num_boxes=2, max_turns=30).dim_room == (7, 7)


def test_state_roundtrip_and_spawn():
    env = gem.make("game:Sokoban-v0-hard")
    obs, _ = env.reset(seed=3)
    state = env.get_state()
    moves = [env.sample_random_action() for _ in range(5)]
    first = [env.step(m)[:4] for m in moves]
    env.set_state(state)
    assert [env.step(m)[:4] for m in moves] == first
    assert env.spawn().reset(seed=3)[0] == obs


@pytest.mark.parametrize(
    "kwargs",
    [dict(dim_room=(3, 3)), dict(dim_room=(6,)), dict(num_boxes=0), dict(num_boxes=9), dict(max_turns=1)],
)
def test_bad_arguments_raise(kwargs):
    with pytest.raises(ValueError):
        SokobanEnv(**{"dim_room": (6, 6), "num_boxes": 2, "max_turns": 20, **kwargs})

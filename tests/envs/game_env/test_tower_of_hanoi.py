import itertools

import pytest

import gem
from gem.agents import SolverAgent, run_episode
from gem.envs.game_env.tower_of_hanoi import TowerofHanoiEnv, next_move, read_towers

PRESETS = {"game:TowerofHanoi-v0-easy": (3, 10), "game:TowerofHanoi-v0-hard": (5, 35)}


@pytest.mark.parametrize("env_id", list(PRESETS))
def test_presets_and_first_observation(env_id):
    env = gem.make(env_id)
    obs, info = env.reset(seed=0)
    disks, turns = PRESETS[env_id]
    assert (env.num_disks, env.max_turns) == (disks, turns)
    assert f"{turns} turns" in obs and "\\boxed{A C}" in obs and "smaller disk" in obs
    assert read_towers(obs) == {"A": list(range(disks, 0, -1)), "B": [], "C": []}
    assert "Enter your first move" in info["suffix"]


def test_moves_render_board_and_illegal_moves_explain():
    env = gem.make("game:TowerofHanoi-v0-easy")
    env.reset(seed=0)
    obs, reward, terminated, truncated, _ = env.step("\\boxed{a,c}")
    assert reward == 0.0 and not (terminated or truncated)
    assert "moved disk 1 from tower A to tower C" in obs and read_towers(obs)["C"] == [1]
    obs, reward, terminated, _, _ = env.step("\\boxed{A C}")
    assert "invalid move" in obs and "smaller disk 1" in obs and reward == 0.0 and not terminated
    obs, reward, terminated, _, _ = env.step("\\boxed{B A}")
    assert "tower B is empty" in obs and reward == 0.0 and not terminated
    obs, reward, terminated, _, _ = env.step("\\boxed{C C}")
    assert "both tower C" in obs and not terminated


@pytest.mark.parametrize("bad", ["\\boxed{A D}", "\\boxed{A}", "move A to C", "\\boxed{ABC}"])
def test_malformed_move_is_format_error(bad):
    env = gem.make("game:TowerofHanoi-v0-easy")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(bad)
    assert reward == -0.1 and terminated and not truncated and info["success"] is False
    assert "could not be read" in obs


def test_turn_limit_gives_share_of_disks_on_c():
    env = gem.make("game:TowerofHanoi-v0-easy")
    env.reset(seed=0)
    moves = ["A C"] + ["B A"] * 9  # refused moves (B is empty) still use turns
    for move in moves:
        obs, reward, terminated, truncated, info = env.step(f"\\boxed{{{move}}}")
    assert truncated and not terminated and info["success"] is False
    assert reward == pytest.approx(1 / 3) and "maximum number of turns" in obs


@pytest.mark.parametrize("env_id", ["game:TowerofHanoi-v0-easy", "game:TowerofHanoi-v0-hard", "game:TowerofHanoi-v0-random"])
def test_solver_wins_every_seed_in_the_fewest_moves(env_id):
    env = gem.make(env_id)
    agent = SolverAgent(env)
    for seed in range(50):
        episode = run_episode(env, agent, seed=seed)
        assert episode.success and episode.rewards[-1] == 1.0
        assert episode.turns == 2**env.num_disks - 1


def test_next_move_is_optimal_from_any_position():
    # Every legal position of 4 disks: the solver's path length equals the BFS distance to the goal.
    def key(towers):
        return tuple(tuple(towers[t]) for t in "ABC")

    goal = {"A": [], "B": [], "C": [4, 3, 2, 1]}
    dist = {key(goal): 0}
    frontier = [goal]
    while frontier:
        nxt = []
        for towers in frontier:
            for src, dst in itertools.permutations("ABC", 2):
                if towers[src] and (not towers[dst] or towers[dst][-1] > towers[src][-1]):
                    child = {t: list(v) for t, v in towers.items()}
                    child[dst].append(child[src].pop())
                    if key(child) not in dist:
                        dist[key(child)] = dist[key(towers)] + 1
                        nxt.append(child)
        frontier = nxt
    assert len(dist) == 3**4
    for state, d in dist.items():
        towers = {t: list(v) for t, v in zip("ABC", state)}
        steps = 0
        while (move := next_move(towers)) is not None:
            towers[move[1]].append(towers[move[0]].pop())
            steps += 1
        assert steps == d


def test_random_preset_draws_sizes_and_samples_are_well_formed():
    env = gem.make("game:TowerofHanoi-v0-random")
    sizes = set()
    for seed in range(30):
        env.reset(seed=seed)
        sizes.add((env.num_disks, env.max_turns))
        _, reward, *_ = env.step(env.sample_random_action())
        assert reward != -0.1
    assert sizes == {(3, 10), (4, 20), (5, 35)}


def test_state_roundtrip_and_spawn():
    env = gem.make("game:TowerofHanoi-v0-hard")
    env.reset(seed=1)
    env.step("\\boxed{A B}")
    state = env.get_state()
    first = env.step("\\boxed{A C}")
    env.set_state(state)
    assert env.step("\\boxed{A C}")[:4] == first[:4]
    copy = env.spawn(same_state=True)
    assert copy.towers == env.towers and copy.towers is not env.towers
    fresh = env.spawn()
    fresh.reset(seed=1)
    assert fresh.towers["A"] == [5, 4, 3, 2, 1]


@pytest.mark.parametrize("kwargs", [dict(num_disks=0), dict(num_disks=3, max_turns=6), dict(num_disks="3")])
def test_bad_arguments_raise(kwargs):
    with pytest.raises(ValueError):
        TowerofHanoiEnv(**{"max_turns": 100, **kwargs})

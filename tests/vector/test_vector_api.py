"""The vector API on every backend: EnvFactory, call/get_attr/set_attr, step_timeout, the type hierarchy."""

from __future__ import annotations

import pickle
import threading
import time
from typing import Any, Iterator, Optional

import pytest

import gem
from gem.core import Env, EnvWrapper, StepResult
from gem.envs.registration import registry
from gem.errors import UnsupportedVectorOperation, VectorEnvError, VectorEnvTimeout
from gem.vector import EnvFactory, LocalVectorEnv, VectorEnv
from gem.vector.process_vector_env import CRASH_INFO_KEY
from gem.vector.remote_vector_env import RemoteEnvFactory
from gem.vector.vector_env import TIMEOUT_INFO_KEY
from tests.conftest import CountEnv, needs_extra
from tests.server.conftest import serve  # noqa: F401 - the fixture, for the remote backend
from tests.vector.test_process_vector_env import registered_test_ids

PLUS = "\\boxed{+}"
HANG_SECONDS = 60.0  # "forever" for a test: in-process hangs are released at teardown
TIMEOUT = 0.5
SLACK = 8.0  # generous: the bound checks that the call does not hang, not how fast it is
ATTR_BACKENDS = ["sync", "thread", "process"]
TIMEOUT_BACKENDS = ["thread", "process"]


class HangEnv(CountEnv):
    """A CountEnv whose step hangs on the action "hang" (and its reset, once asked to)."""

    release = threading.Event()
    closed = 0
    hang_next_reset = False
    stepped_in = ""  # the name of the thread that ran the last step

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        if self.hang_next_reset:
            self.hang_next_reset = False
            HangEnv.release.wait(HANG_SECONDS)
        return super().reset(seed)

    def step(self, action: str) -> StepResult:
        HangEnv.stepped_in = threading.current_thread().name
        if action == "hang":
            HangEnv.release.wait(HANG_SECONDS)
        return super().step(action)

    def close(self) -> None:
        HangEnv.closed += 1


class ItemSetEnv(CountEnv):
    """An env that needs its seed at construction (its constructor names ``seed``): the seed picks
    its item set, as reasoning-gym's does; reset() then draws an item from the env's generator."""

    def __init__(self, target: int = 2, seed: int = 1000) -> None:
        super().__init__(target)
        self.built_with = seed
        self.items = [f"item-{seed}-{k}" for k in range(50)]

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        obs, info = super().reset(seed)
        return f"{obs} {self.items[self.rng.randrange(len(self.items))]}", info


class Tagged(EnvWrapper):
    """A wrapper with a setting of its own (``tag``); other attributes are the inner env's."""

    tag = "plain"


@pytest.fixture(autouse=True)
def test_ids() -> Iterator[None]:
    with registered_test_ids():
        gem.register("test:Hang-v0", HangEnv, target=3)
        HangEnv.release.clear()
        try:
            yield
        finally:
            HangEnv.release.set()  # frees threads stuck in abandoned calls
            registry.pop("test:Hang-v0", None)


# ------------------------------------------------------------------ EnvFactory
def test_make_vec_hands_every_backend_env_factories():
    vec = gem.make_vec(["test:Count2-v0", "test:Count3-v0"], wrappers=[Tagged], seed=7)
    try:
        fns = vec.env_fns
        assert all(isinstance(fn, EnvFactory) for fn in fns)
        assert [fn.env_id for fn in fns] == ["test:Count2-v0", "test:Count3-v0"]
        assert [fn.seed for fn in fns] == [7, 8] and fns[0].wrappers == (Tagged,)
        assert [fn.kwargs for fn in fns] == [{}, {}]  # the seed is a field, never a constructor kwarg
        copy = pickle.loads(pickle.dumps(fns[1]))
        assert copy == fns[1]
        env = copy()
        assert isinstance(env, Tagged) and env.unwrapped.target == 3
        assert env.reset()[0] == vec.envs[1].reset()[0]  # same seed, same first observation
        assert fns[0].replace(seed=1).seed == 1 and fns[0].seed == 7
    finally:
        vec.close()
    with pytest.raises(ValueError, match="env id"):
        EnvFactory("")


def test_env_factory_seed_is_a_named_field():
    # a seed in kwargs (the old form) moves to the field; given twice, or not an integer, it is refused
    old_form = EnvFactory("test:Count2-v0", {"seed": 4, "target": 5})
    assert old_form.seed == 4 and old_form.kwargs == {"target": 5}
    assert old_form == EnvFactory("test:Count2-v0", {"target": 5}, seed=4)
    with pytest.raises(ValueError, match="seed twice"):
        EnvFactory("test:Count2-v0", {"seed": 4}, seed=5)
    with pytest.raises(ValueError, match="integer"):
        EnvFactory("test:Count2-v0", seed="4")  # type: ignore[arg-type]
    # the factory's seed is make's: the same seed, the same first observation; another seed, another
    a, b = EnvFactory("test:Count2-v0", seed=11)(), EnvFactory("test:Count2-v0", seed=11)()
    assert a.reset()[0] == b.reset()[0] == gem.make("test:Count2-v0", seed=11).reset()[0]
    assert EnvFactory("test:Count2-v0", seed=12)().reset()[0] != a.reset()[0]
    # a vec_kwargs entry may name its env's seed; the others get seed + i
    vec = gem.make_vec(["test:Count2-v0"] * 3, vec_kwargs=[{}, {"seed": 40}, {}], seed=7)
    with vec:
        assert [fn.seed for fn in vec.env_fns] == [7, 40, 9]


def test_remote_factory_takes_the_client_options_out(monkeypatch):
    monkeypatch.delenv("GEM_SERVER_URL", raising=False)
    kwargs = {"seed": 3, "url": "http://h:1", "token": "t", "target": 5}
    plain = EnvFactory("test:Count2-v0", kwargs, (Tagged,))
    remote = RemoteEnvFactory.from_factory(plain)
    assert remote.client == {"url": "http://h:1", "token": "t"}
    assert remote.kwargs == {"target": 5} and remote.seed == 3 and remote.wrappers == (Tagged,)
    assert pickle.loads(pickle.dumps(remote)) == remote
    with pytest.raises(ValueError, match="url="):
        RemoteEnvFactory.from_factory(EnvFactory("test:Count2-v0"))
    monkeypatch.setenv("GEM_SERVER_URL", "http://env:2")
    assert RemoteEnvFactory.from_factory(EnvFactory("test:Count2-v0")).client == {"url": "http://env:2"}


@pytest.mark.parametrize("backend", ATTR_BACKENDS)
def test_the_seed_reaches_every_env_by_name_on_every_backend(backend):
    registry.pop("test:ItemSet-v0", None)
    gem.register("test:ItemSet-v0", ItemSetEnv, target=2)
    try:
        ids = ["test:ItemSet-v0", "test:Count2-v0"] * 2
        expected = [gem.make(env_id, seed=7 + i).reset()[0] for i, env_id in enumerate(ids)]
        assert expected[0].endswith(tuple(f"item-7-{k}" for k in range(50)))  # the constructor got 7
        assert len(set(expected[::2])) == 2  # seeds 7 and 9: other item sets
        with gem.make_vec(ids, seed=7, backend=backend) as vec:
            observations = list(vec.reset()[0])
            assert observations == expected  # reset() without a seed: make's seed decides
            assert "item-7-" in observations[0] and "item-9-" in observations[2]  # built with 7 and 9
        with gem.make_vec(ids, seed=7, backend=backend) as again:
            assert list(again.reset()[0]) == expected
        # the spec keeps its own kwargs: spawn() builds with the spec's seed, not make's
        env = gem.make("test:ItemSet-v0", seed=7)
        assert "seed" not in env.spec.kwargs and env.spawn().built_with == 1000
    finally:
        registry.pop("test:ItemSet-v0", None)


def test_no_env_overrides_the_seeding_hook():
    # make seeds the generators through Env itself; an env that needs its seed names it in its
    # constructor instead of overriding a private method. Every registered class, and its bases:
    import importlib

    overriding, checked = set(), 0
    for env_spec in list(registry.values()):
        if not isinstance(env_spec.entry_point, str):
            continue
        module_name, _, attr = env_spec.entry_point.partition(":")
        try:
            cls = getattr(importlib.import_module(module_name), attr)
        except ImportError:  # an env whose extra is not installed
            continue
        if not isinstance(cls, type):
            continue
        checked += 1
        overriding.update(
            f"{base.__module__}.{base.__qualname__}"
            for base in cls.__mro__
            if base is not Env and "_set_default_seed" in vars(base)
        )
    assert checked > 20 and overriding == set()


# -------------------------------------------------------------- the hierarchy
def test_vector_env_is_its_own_base_not_an_env():
    vec = gem.make_vec("test:Count2-v0", num_envs=2)
    with vec:
        assert isinstance(vec, VectorEnv) and isinstance(vec, LocalVectorEnv)
        assert not isinstance(vec, Env) and len(vec) == 2
        with pytest.raises(TypeError, match="wraps a gem.Env"):
            EnvWrapper(vec)  # type: ignore[arg-type]
        assert [e.env_id for e in vec.envs] == ["test:Count2-v0"] * 2  # GEM code uses vec.envs[i]
    with pytest.raises(TypeError, match="abstract"):
        VectorEnv(["test:Count2-v0"], [EnvFactory("test:Count2-v0")])  # type: ignore[abstract]


# --------------------------------------------------- call / get_attr / set_attr
def _make(backend: str, ids: list[str], **kwargs: Any) -> Any:
    options = {"num_workers": 2} if backend == "process" else {}
    options.update(kwargs.pop("backend_kwargs", {}))
    return gem.make_vec(ids, backend=backend, backend_kwargs=options, seed=7, **kwargs)


@pytest.mark.parametrize("backend", ATTR_BACKENDS)
def test_call_get_attr_set_attr(backend):
    ids = ["test:Count2-v0", "test:Count3-v0", "test:Count3-v0"]
    vec = _make(backend, ids, wrappers=[Tagged])
    try:
        assert vec.get_attr("target") == (2, 3, 3)  # through the wrapper, from the inner env
        assert vec.get_attr("env_id") == tuple(ids)
        assert vec.call("sample_random_action") == (PLUS,) * 3
        assert vec.call("target") == (2, 3, 3)  # not callable: its value, as Gymnasium does
        first = vec.call("reset", seed=5)
        assert first[1] == first[2] and first[0][0].startswith("start")
        vec.reset(seed=0)
        vec.set_attr("target", [1, 1, 3])  # one value per env, set on the inner env
        vec.set_attr("tag", "shiny")  # one value for all, set on the wrapper that owns it
        assert vec.get_attr("target") == (1, 1, 3) and vec.get_attr("tag") == ("shiny",) * 3
        obs, rewards, terminated, _, infos = vec.step([PLUS] * 3)
        assert terminated.tolist() == [True, True, False] and rewards.tolist() == [1.0, 1.0, 0.0]
        assert infos[0]["final_obs"] == "count 1" and obs[2] == "count 1"
        if backend != "process":
            assert vec.envs[0].env.target == 1 and vec.envs[0].tag == "shiny"
            assert "target" not in vars(vec.envs[0]) and "tag" in vars(vec.envs[0])
    finally:
        vec.close()


@pytest.mark.parametrize("backend", ATTR_BACKENDS)
def test_call_errors_name_the_env(backend):
    vec = _make(backend, ["test:Count2-v0", "test:Boom-v0"])
    try:
        with pytest.raises(VectorEnvError, match=r"Env 0 \(test:Count2-v0\) raised AttributeError") as info:
            vec.get_attr("no_such_attribute")
        assert info.value.index == 0
        with pytest.raises(VectorEnvError, match=r"Env 0 .* raised TypeError: 'target' is not callable"):
            vec.call("target", 1)
        with pytest.raises(ValueError, match="3 values for 2 envs"):
            vec.set_attr("target", [1, 2, 3])
        with pytest.raises(ValueError, match="attribute name is a string"):
            vec.get_attr(3)  # type: ignore[arg-type]
        vec.reset(seed=0)
        vec.step([PLUS, PLUS])
        with pytest.raises(VectorEnvError, match=r"Env 1 \(test:Boom-v0\) raised RuntimeError: boom"):
            vec.call("step", PLUS)
    finally:
        vec.close()


# ---------------------------------------------------------------- step_timeout
def test_sync_backend_refuses_a_timeout_and_names_those_that_have_one():
    with pytest.raises(ValueError, match="cannot interrupt.*backend='thread', 'process', 'ray' or 'remote'"):
        gem.make_vec("test:Count2-v0", backend="sync", backend_kwargs={"step_timeout": 1.0})


@pytest.mark.parametrize("bad", [0, -1.0, "1", True])
def test_bad_timeouts_are_refused(bad):
    with pytest.raises(ValueError, match="step_timeout must be a positive number"):
        gem.make_vec("test:Count2-v0", backend="thread", backend_kwargs={"step_timeout": bad})


def _timed(fn: Any, *args: Any) -> tuple[pytest.ExceptionInfo, float]:
    start = time.monotonic()
    with pytest.raises(VectorEnvTimeout) as info:
        fn(*args)
    return info, time.monotonic() - start


def _lost_reason(info: dict[str, Any], key: str) -> str:
    return info["final_info"][key]


@pytest.mark.parametrize("backend", TIMEOUT_BACKENDS)
def test_hung_step_raises_a_timeout_and_the_vector_env_goes_on(backend):
    ids = ["test:Count3-v0", "test:Hang-v0", "test:Count3-v0", "test:Count3-v0"]
    vec = _make(backend, ids, backend_kwargs={"step_timeout": TIMEOUT})
    try:
        assert vec.step_timeout == TIMEOUT
        vec.reset(seed=0)
        info, elapsed = _timed(vec.step, [PLUS, "hang", PLUS, PLUS])
        error = info.value
        assert TIMEOUT <= elapsed < TIMEOUT + SLACK
        assert isinstance(error, TimeoutError) and isinstance(error, VectorEnvError)
        assert error.index == 1 and error.env_id == "test:Hang-v0" and error.indices == (1,)
        assert "Env 1 (test:Hang-v0) did not finish step within step_timeout=0.5 s" in str(error)
        # The envs that finished are on the error (process: env 0 shares the killed worker).
        finished = {0, 2, 3} if backend == "thread" else {2, 3}
        assert set(error.results) == finished and all(error.results[i][0] == "count 1" for i in finished)

        obs, rewards, terminated, truncated, infos = vec.step([PLUS] * 4)
        lost = {1} if backend == "thread" else {0, 1}
        key = TIMEOUT_INFO_KEY if backend == "thread" else CRASH_INFO_KEY
        assert truncated.tolist() == [i in lost for i in range(4)] and not terminated.any()
        for i in lost:  # the lost episodes ended; a new one began (SAME_STEP)
            assert obs[i].startswith("start") and rewards[i] == 0.0
            assert "step_timeout=0.5" in _lost_reason(infos[i], key)
        for i in set(range(4)) - lost:
            assert obs[i] == "count 2"
        if backend == "process":
            assert vec.restarts == 1 and "killed" in _lost_reason(infos[1], key)
        again, _ = vec.reset(seed=0)
        obs, *_ = vec.step([PLUS] * 4)
        assert obs == ["count 1"] * 4 and len(again) == 4
    finally:
        vec.close()


def test_thread_backend_abandons_the_env_and_closes_it_when_its_call_returns():
    vec = gem.make_vec(["test:Hang-v0"] * 2, backend="thread", backend_kwargs={"step_timeout": TIMEOUT})
    try:
        vec.reset(seed=0)
        hung_env = vec.envs[0]
        _timed(vec.step, ["hang", PLUS])
        assert vec.envs[0] is not hung_env  # rebuilt from its factory
        closed = HangEnv.closed
        HangEnv.release.set()  # the hung call returns at last
        deadline = time.monotonic() + SLACK
        while HangEnv.closed == closed and time.monotonic() < deadline:
            time.sleep(0.01)
        assert HangEnv.closed == closed + 1
        obs, *_ = vec.step([PLUS, PLUS])  # env 0 reports its lost episode; env 1 goes on
        assert obs[0].startswith("start") and obs[1] == "count 2"
    finally:
        vec.close()


def test_hung_call_does_not_starve_the_calls_queued_behind_it():
    options = {"max_workers": 1, "step_timeout": TIMEOUT}
    vec = gem.make_vec(["test:Hang-v0"] * 3, backend="thread", backend_kwargs=options)
    try:
        vec.reset(seed=0)
        info, elapsed = _timed(vec.step, ["hang", PLUS, PLUS])  # envs 1 and 2 wait for the only thread
        assert info.value.indices == (0,) and set(info.value.results) == {1, 2}
        assert elapsed < TIMEOUT + SLACK
        obs, *_ = vec.step([PLUS] * 3)
        assert obs[1:] == ["count 2", "count 2"]
    finally:
        vec.close()


@pytest.mark.parametrize("backend", TIMEOUT_BACKENDS)
def test_hung_reset_and_call_raise_a_timeout(backend):
    ids = ["test:Hang-v0", "test:Hang-v0", "test:Count2-v0"]
    vec = _make(backend, ids, backend_kwargs={"step_timeout": TIMEOUT})
    try:
        vec.set_attr("hang_next_reset", [False, True, False])
        info, elapsed = _timed(vec.reset, 0)
        assert info.value.index == 1 and "did not finish reset" in str(info.value)
        assert TIMEOUT <= elapsed < TIMEOUT + SLACK
        obs, _ = vec.reset(seed=0)  # works again (a fresh env 1)
        assert len(obs) == 3 and all(o.startswith("start") for o in obs)
        info, _ = _timed(vec.call, "step", "hang")
        assert info.value.index == 0 and "did not finish call('step')" in str(info.value)
        assert vec.get_attr("target") == (3, 3, 2)
    finally:
        vec.close()


@pytest.mark.parametrize("step_timeout", [None, 5.0])
def test_thread_backend_steps_fast_envs_inline_unless_it_must_watch_them(step_timeout):
    options = {"step_timeout": step_timeout}
    vec = gem.make_vec("test:Hang-v0", num_envs=2, backend="thread", backend_kwargs=options)
    try:
        vec.reset(seed=0)
        for _ in range(3):  # the first steps measure the envs: fast
            vec.step([PLUS, PLUS])
            vec.reset()
        vec.step([PLUS, PLUS])
        in_caller = HangEnv.stepped_in == threading.current_thread().name
        assert in_caller == (step_timeout is None)  # a timeout needs the pool, which can give up
    finally:
        vec.close()


# -------------------------------------------------------------------- remote
@pytest.fixture
def server_extra() -> None:
    needs_extra("server")


def test_remote_backend_attributes_and_timeout(server_extra, serve):  # noqa: F811 - the imported fixture
    server = serve()
    vec = gem.make_vec(
        ["test:Count2-v0", "test:Hang-v0"], backend="remote", url=server.url, seed=7,
        backend_kwargs={"step_timeout": 2.0},
    )
    try:
        assert vec.get_attr("url") == (server.url, server.url)
        sessions = vec.get_attr("session_id")
        assert all(isinstance(s, str) for s in sessions) and sessions[0] != sessions[1]
        vec.set_attr("timeout", 30.0)
        assert vec.get_attr("timeout") == (30.0, 30.0)
        for op in (lambda: vec.get_attr("target"), lambda: vec.call("hang_next_reset"),
                   lambda: vec.set_attr("target", 1)):
            with pytest.raises(UnsupportedVectorOperation, match="has no 'target'|has no 'hang_next_reset'"):
                op()
        vec.reset(seed=0)
        info, elapsed = _timed(vec.step, [PLUS, "hang"])
        assert info.value.index == 1 and info.value.env_id == "test:Hang-v0" and elapsed < 2.0 + SLACK
        assert info.value.results[0][0] == "count 1"
        HangEnv.release.set()  # let the server's thread finish
        obs, _, _, truncated, infos = vec.step([PLUS, PLUS])
        assert truncated.tolist() == [False, True] and TIMEOUT_INFO_KEY in infos[1]["final_info"]
        assert obs[1].startswith("start") and vec.get_attr("session_id")[1] != sessions[1]  # a new session
    finally:
        vec.close()

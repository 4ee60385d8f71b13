"""RL2 and ROLL adapters against the pinned interfaces of those frameworks (``framework_pins.json``).

Neither framework is on PyPI, so neither installs in CI. Instead the names, signatures and config
keys the adapters rely on were read from each framework's public repository at a pinned commit. For
RL2 the adapter is run against a stand-in ``RL2`` package built *from the pin*: every pinned function
has exactly the pinned signature and raises ``TypeError`` on a call that does not bind to it, and
nothing outside the pin exists. So the test fails when the adapter imports a name the pinned RL2 does
not have, calls a pinned function with arguments its signature rejects, reads a ``Sample`` field the
pin lacks, or returns an env response without the keys RL2 reads. For ROLL it checks the config the
adapter writes has every key ROLL's env manager reads, and that GEM still offers everything ROLL
imports from it and the keyword calls ROLL makes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import importlib
import inspect
import json
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from tests.examples.test_examples import _load

PINS = json.loads((Path(__file__).with_name("framework_pins.json")).read_text())
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _signature(text: str) -> inspect.Signature:
    namespace: dict[str, Any] = {}
    exec(f"def f{text}: pass", namespace)  # the pinned signature text, e.g. "(tokenizer, sample, response)"
    return inspect.signature(namespace["f"])


# ---------------------------------------------------------------------------------------------- RL2


class _Recorder:
    """The calls the adapter made into the stand-in RL2, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, inspect.BoundArguments]] = []


def _rl2_modules(pin: dict[str, Any], recorder: _Recorder, router) -> dict[str, types.ModuleType]:
    """``RL2``, ``RL2.datasets`` and ``RL2.utils.communication`` holding the pinned names only."""
    status = enum.Enum("Status", {name: name.lower() for name in pin["sample_status"]})
    fields = []
    for name, default in pin["sample_fields"].items():
        if name == "status":
            default = status[default]
        if isinstance(default, (dict, list)):
            fields.append((name, Any, dataclasses.field(default_factory=type(default))))
        else:
            fields.append((name, Any, dataclasses.field(default=default)))
    sample_cls = dataclasses.make_dataclass("Sample", fields, slots=True)  # slots: unknown fields raise
    sample_cls.Status = status

    def bound(name: str, text: str, *args: Any, **kwargs: Any) -> inspect.BoundArguments:
        try:
            b = _signature(text).bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{name}{text} (pinned RL2) rejects this call: {exc}") from None
        recorder.calls.append((name, b))
        return b.arguments

    sigs = {**pin["modules"]["RL2.datasets"], **pin["modules"]["RL2.utils.communication"]}

    def initialize_state_dict(*args: Any, **kwargs: Any) -> dict[str, list]:
        a = bound("initialize_state_dict", sigs["initialize_state_dict"], *args, **kwargs)
        ids = a["tokenizer"].encode(a["state_text"], add_special_tokens=False)
        return {key: list(ids) if key == "states" else [0] * len(ids) for key in pin["state_dict_keys"]}

    def add_llm_response(*args: Any, **kwargs: Any) -> None:
        a = bound("add_llm_response", sigs["add_llm_response"], *args, **kwargs)
        sample, response = a["sample"], a["response"]
        assert set(pin["router_response"]["meta_info"]) <= set(response["meta_info"])
        sample.action_text = response["text"]
        ids = [t for _, t, _ in response["meta_info"]["output_token_logprobs"]]
        sample.state_dict["states"].extend(ids)
        sample.state_dict["rewards"].extend([0.0] * len(ids))
        sample.turn += 1

    def add_env_response(*args: Any, **kwargs: Any) -> None:
        a = bound("add_env_response", sigs["add_env_response"], *args, **kwargs)
        sample, response = a["sample"], a["response"]
        missing = set(pin["env_response_keys"]) - set(response)
        assert not missing, f"RL2 reads {sorted(missing)} from the env response"
        sample.state_dict["rewards"][-1] = response["reward"]
        if response["done"]:
            sample.status = status.DONE
            sample.state_dicts.append(sample.state_dict)
            return
        sample.state_text = response["next_state"]

    async def async_request(*args: Any, **kwargs: Any) -> dict[str, Any]:
        a = bound("async_request", sigs["async_request"], *args, **kwargs)
        body = a["kwargs"]["json"]
        assert set(body) == set(pin["router_request_keys"])
        return router(body)

    def base_generate(*args: Any, **kwargs: Any) -> None:
        bound("base_generate", sigs["base_generate"], *args, **kwargs)

    datasets = types.ModuleType("RL2.datasets")
    datasets.Sample = sample_cls
    for fn in (initialize_state_dict, add_llm_response, add_env_response, base_generate):
        datasets.__dict__[fn.__name__] = fn
    assert set(n for n in vars(datasets) if not n.startswith("__")) == set(pin["modules"]["RL2.datasets"])
    communication = types.ModuleType("RL2.utils.communication")
    communication.async_request = async_request
    utils = types.ModuleType("RL2.utils")
    utils.communication = communication
    root = types.ModuleType("RL2")
    root.datasets, root.utils = datasets, utils
    return {"RL2": root, "RL2.datasets": datasets, "RL2.utils": utils, "RL2.utils.communication": communication}


@pytest.fixture
def rl2(monkeypatch):
    """Load the adapter against the pinned RL2; yields (adapter, Sample, recorder, tokenizer)."""
    pytest.importorskip("omegaconf")
    pytest.importorskip("transformers")
    from gem.utils.tiny_tokenizer import get_tiny_tokenizer

    tokenizer = get_tiny_tokenizer()
    recorder = _Recorder()
    script: list[str] = []

    def router(body: dict[str, Any]) -> dict[str, Any]:
        text = script.pop(0)
        ids = tokenizer.encode(text, add_special_tokens=False)
        return {"text": text, "meta_info": {"finish_reason": {"type": "stop"}, "completion_tokens": len(ids),
                                            "output_token_logprobs": [(-0.5, t, None) for t in ids]}}

    for name, module in _rl2_modules(PINS["RL2"], recorder, router).items():
        monkeypatch.setitem(sys.modules, name, module)
    adapter = _load("rl2/gem_env.py")
    yield adapter, sys.modules["RL2.datasets"].Sample, recorder, tokenizer, script


def test_rl2_env_file_entry_matches_the_pin(rl2):
    adapter = rl2[0]
    entry = PINS["RL2"]["env_file"]
    fn = getattr(adapter, entry["entry"])
    assert inspect.iscoroutinefunction(fn) is entry["async"]
    _signature(str(inspect.signature(fn))).bind(*entry["called_as"])  # RL2 calls it positionally


def test_rl2_adapter_plays_an_episode_through_the_pinned_interface(rl2):
    from omegaconf import OmegaConf

    import gem

    adapter, sample_cls, recorder, tokenizer, script = rl2
    env = gem.make("game:GuessTheNumber-v0-easy")
    env.reset(seed=7)
    target = env.target
    wrong = target % 10 + 1
    script += [f"\\boxed{{{wrong}}}", f"\\boxed{{{target}}}"]
    sample = sample_cls(sample={"env_id": "game:GuessTheNumber-v0-easy", "seed": 7})
    config = OmegaConf.create({"sampling_params": {"max_new_tokens": 64, "temperature": 1.0}})
    asyncio.run(adapter.generate(config, tokenizer, "http://router.invalid", sample))

    assert sample.status == sample_cls.Status.DONE and not script
    names = [n for n, _ in recorder.calls]
    assert names == ["initialize_state_dict", "async_request", "add_llm_response", "add_env_response",
                     "async_request", "add_llm_response", "add_env_response"]
    (state,) = sample.state_dicts
    assert state["rewards"][-1] == 1.0  # the winning guess's reward lands on its last token
    assert "gem_env" not in sample.sample  # the env is closed and dropped when the episode ends
    # the second turn's request asked for the budget left, and RL2's router keeps stop tokens
    request = recorder.calls[4][1].arguments["kwargs"]["json"]
    assert request["sampling_params"]["no_stop_trim"] is True and request["return_logprob"] is True


def test_rl2_stand_in_rejects_a_call_off_the_pin(rl2):
    """The stand-in is strict: the adapter's former call (with ``config`` first) no longer binds."""
    datasets = sys.modules["RL2.datasets"]
    with pytest.raises(TypeError, match="pinned RL2"):
        datasets.add_env_response(object(), object(), object(), {"reward": 0.0, "done": True, "next_state": ""})


def test_rl2_adapter_imports_only_pinned_names():
    source = (EXAMPLES / "rl2/gem_env.py").read_text()
    for module, names in re.findall(r"^from (RL2[\w.]*) import (.+)$", source, re.M):
        for name in (n.strip() for n in names.split(",")):
            assert name in PINS["RL2"]["modules"][module], f"{module}.{name} is not in the pinned RL2"


# --------------------------------------------------------------------------------------------- ROLL


def test_roll_config_has_every_key_rolls_env_manager_reads():
    roll = _load("roll/gem_roll.py")
    pin = PINS["ROLL"]
    config = roll.custom_envs_config(["game:GuessTheNumber-v0-easy", "game:Minesweeper-v0-easy"])
    assert len(config) == 2
    allowed = set(pin["custom_env_required_keys"]) | set(pin["custom_env_optional_keys"])
    for entry in config.values():
        assert set(pin["custom_env_required_keys"]) <= set(entry)
        assert set(entry) <= allowed, set(entry) - allowed
        assert entry["env_manager_cls"] == pin["default_env_manager_cls"]
        fields = set(re.findall(r"{(\w+)}", entry["agent_template"]))
        assert "observation" in fields and fields <= set(pin["agent_template_fields"])
    with pytest.raises(ValueError, match="observation"):
        roll.custom_envs_config(["game:GuessTheNumber-v0"], agent_template="no field")


def test_roll_yaml_fragment_has_every_key_rolls_env_manager_reads():
    yaml = pytest.importorskip("yaml")
    fragment = yaml.safe_load((EXAMPLES / "roll/gem_guess_the_number.yaml").read_text())
    for tag in fragment["train_env_manager"]["tags"] + fragment["val_env_manager"]["tags"]:
        entry = fragment["custom_envs"][tag]
        assert set(PINS["ROLL"]["custom_env_required_keys"]) <= set(entry)
    roll = _load("roll/gem_roll.py")
    roll.check_env_types(fragment["custom_envs"])


def test_roll_plays_gem_with_the_keyword_calls_roll_makes():
    """ROLL's env manager: ``gem.make(env_id=...)``, ``reset(seed=...)``, ``step(action=...)``."""
    import gem

    env = gem.make(env_id="game:GuessTheNumber-v0-easy")
    obs, info = env.reset(seed=3)
    assert "between 1 and 10" in obs and isinstance(info, dict)
    observation, reward, terminated, truncated, info = env.step(action=f"\\boxed{{{env.target}}}")
    assert reward == 1.0 and terminated
    roll = _load("roll/gem_roll.py")
    with pytest.raises(Exception, match="(?i)no-such-env|not found|unknown"):
        roll.check_env_types(roll.custom_envs_config(["game:no-such-env-v0"]))


@pytest.mark.parametrize("framework", ["ROLL", "RL2"])
def test_gem_still_offers_what_the_framework_imports_from_it(framework):
    for ref in PINS[framework]["gem_imports"]:
        module, name = ref.split(":")
        assert hasattr(importlib.import_module(module), name), f"{framework} imports {name} from {module}"


# ---------------------------------------------------------------------------------------------- Oat


def test_oat_transition_data_fields_match_the_pin():
    """Oat needs CUDA to install; the ``TransitionData`` the adapter builds must fit Oat 0.2.4's fields."""
    import ast

    pin = PINS["Oat"]["TransitionData"]
    tree = ast.parse((EXAMPLES / "oat/gem_oat.py").read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "TransitionData"]
    assert calls, "the adapter no longer builds TransitionData"
    for call in calls:
        names = {k.arg for k in call.keywords}
        assert not call.args and set(pin["required"]) <= names, set(pin["required"]) - names
        assert names <= set(pin["required"]) | set(pin["optional"]), names - set(pin["required"]) - set(pin["optional"])

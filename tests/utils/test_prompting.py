import gem
from gem.utils.prompting import user_content


def test_suffix_and_prefix_reach_the_user_turn():
    env = gem.make("math:Arithmetic")
    obs, info = env.reset(seed=0)
    text = user_content(obs, info)
    assert text.startswith(obs)
    assert text.endswith(info["suffix"])
    assert "\\boxed{}" in text
    assert user_content("Q", {"prefix": "P", "suffix": "S"}) == "P\n\nQ\n\nS"


def test_no_double_instruction_and_empty_parts():
    assert user_content("Q\n\nS", {"suffix": "S"}) == "Q\n\nS"
    assert user_content("P Q", {"prefix": "P"}) == "P Q"
    assert user_content("Q", None) == "Q"
    assert user_content("Q\n", {"suffix": "S"}) == "Q\n\nS"
    assert user_content("", {"suffix": "S"}) == "S"


def test_a_chat_rendered_history_gets_no_second_instruction_after_the_assistant_header():
    from gem.wrappers.observation_wrapper import ObservationWrapper
    from tests.wrappers.test_observation_wrapper import ScriptedTokenizer

    env = ObservationWrapper(gem.make("math:Arithmetic"), tokenizer=ScriptedTokenizer())
    obs, info = env.reset(seed=0)
    text = user_content(obs, info)
    assert text == obs and text.count(info["suffix"]) == 1

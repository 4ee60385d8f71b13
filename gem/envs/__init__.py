"""The table of built-in env ids: id -> entry point + default kwargs.

Declarative on purpose: registering an id imports nothing; ``gem.make`` imports the env's module.
Each family has its own section; a game's presets are one ``_presets`` call.
"""

from __future__ import annotations

from typing import Any, Optional

from gem.envs.registration import register


def _presets(
    name: str,
    entry_point: str,
    description: str,
    presets: dict[str, dict[str, Any]],
    extra: Optional[str] = None,
) -> None:
    """Register ``game:<name>-v0-<preset>`` for each preset (``""`` means plain ``-v0``).

    ``extra`` names the pip extra the game's dependencies come with (the word list: ``games``).
    """
    for preset, kwargs in presets.items():
        suffix = f"-{preset}" if preset else ""
        register(
            f"game:{name}-v0{suffix}",
            entry_point,
            description=f"{description} ({preset or 'default'})",
            extra=extra,
            **kwargs,
        )


# ------------------------------------------------------------------ games
_presets(
    "GuessTheNumber",
    "gem.envs.game_env.guess_the_number:GuessTheNumberEnv",
    "find a hidden number from higher/lower hints",
    {
        "": dict(min_number=1, max_number=20, max_turns=20),
        "easy": dict(min_number=1, max_number=10, max_turns=4),
        "hard": dict(min_number=1, max_number=50, max_turns=7),
        "random": dict(min_number=None, max_number=None, max_turns=None),
    },
)

# ------------------------------------------------------ games: word and logic games
# (Mastermind, Minesweeper, Wordle, Hangman, WordSearch, Crosswords)
_presets(
    "Mastermind",
    "gem.envs.game_env.mastermind:MastermindEnv",
    "crack a digit code from black/white peg feedback",
    {
        "easy": dict(code_length=2, num_numbers=6, max_turns=10, duplicate_numbers=False),
        "hard": dict(code_length=4, num_numbers=8, max_turns=30, duplicate_numbers=False),
        "random": dict(code_length=None, num_numbers=None, max_turns=None, duplicate_numbers=False),
    },
)
_presets(
    "Minesweeper",
    "gem.envs.game_env.minesweeper:MinesweeperEnv",
    "clear a minefield from the neighbour counts",
    {
        "easy": dict(rows=5, cols=5, num_mines=5, max_turns=25),
        "hard": dict(rows=8, cols=8, num_mines=12, max_turns=64),
        "random": dict(rows=None, cols=None, num_mines=None, max_turns=None),
    },
)
_presets(
    "Wordle",
    "gem.envs.game_env.wordle:WordleEnv",
    "find a secret word from green/yellow letter feedback",
    {
        "easy": dict(word_length=3, only_real_words=True, max_turns=15),
        "hard": dict(word_length=5, only_real_words=True, max_turns=25),
        "random": dict(word_length=None, only_real_words=True, max_turns=None),
    },
    extra="games",
)
_presets(
    "Hangman",
    "gem.envs.game_env.hangman:HangmanEnv",
    "find a secret word by guessing letters",
    {
        "easy": dict(word_length=3, hardcore=False, max_turns=10),
        "hard": dict(word_length=7, hardcore=False, max_turns=20),
        "random": dict(word_length=None, hardcore=False, max_turns=None),
    },
    extra="games",
)
_presets(
    "WordSearch",
    "gem.envs.game_env.word_search:WordSearchEnv",
    "find the listed words hidden in a letter grid",
    {
        "easy": dict(hardcore=False, max_turns=20, num_words=5),
        "hard": dict(hardcore=True, max_turns=20, num_words=8),
        "random": dict(hardcore=None, max_turns=None, num_words=None),
    },
    extra="games",
)
_presets(
    "Crosswords",
    "gem.envs.game_env.crosswords:CrosswordsEnv",
    "fill a small crossword from its clues",
    {
        "easy": dict(hardcore=False, max_turns=30, num_words=3),
        "hard": dict(hardcore=True, max_turns=40, num_words=4),
        "random": dict(hardcore=None, max_turns=None, num_words=None),
    },
)

# ------------------------------------------------------ games: puzzles
# (FifteenPuzzle, Sudoku, TowerofHanoi, Game2048, Sokoban)
_presets(
    "FifteenPuzzle",
    "gem.envs.game_env.fifteen_puzzle:FifteenPuzzleEnv",
    "slide numbered tiles into order",
    {
        "easy": dict(num_rows=2, max_turns=10),
        "hard": dict(num_rows=4, max_turns=50),
        "random": dict(num_rows=None, max_turns=None),
    },
)
_presets(
    "Sudoku",
    "gem.envs.game_env.sudoku:SudokuEnv",
    "fill a Sudoku grid with a unique solution",
    {
        "easy": dict(clues=10, max_turns=15, scale=4),
        "hard": dict(clues=50, max_turns=50, scale=9),
        "random": dict(clues=None, max_turns=None, scale=None),
    },
)
_presets(
    "TowerofHanoi",
    "gem.envs.game_env.tower_of_hanoi:TowerofHanoiEnv",
    "move a stack of disks from tower A to tower C",
    {
        "easy": dict(num_disks=3, max_turns=10),
        "hard": dict(num_disks=5, max_turns=35),
        "random": dict(num_disks=None, max_turns=None),
    },
)
_presets(
    "Game2048",
    "gem.envs.game_env.game_2048:Game2048Env",
    "slide and merge tiles to reach a target tile",
    {
        "easy": dict(target_tile=64, max_turns=50),
        "hard": dict(target_tile=512, max_turns=50),
        "extreme-hard": dict(target_tile=2048, max_turns=100),
        "random": dict(target_tile=None, max_turns=None),
    },
)
_presets(
    "Sokoban",
    "gem.envs.game_env.sokoban:SokobanEnv",
    "push every box onto a target",
    {
        "easy": dict(dim_room=(6, 6), num_boxes=2, max_turns=20),
        "hard": dict(dim_room=(8, 8), num_boxes=4, max_turns=50),
        "random": dict(room_size=None, num_boxes=None, max_turns=None),
    },
)

# ------------------------------------------------------ math, qa, logic, rg, eval
# Hub-backed ids keep GEM's hub names; pass dataset_name=/path/to/file.jsonl to use a local copy.
_MATH = "gem.envs.math_env:MathEnv"
_QA = "gem.envs.qa_env:QaEnv"
_LOGIC = "gem.envs.logic_env:LogicEnv"
register(
    "math:Arithmetic",
    _MATH,
    description="generated arithmetic and word problems with exact answers (offline, bundled; graded exactly "
    "without the math extra, since every gold answer is a number)",
    dataset_name="arithmetic",
)
register(
    "math:Arithmetic-easy",
    _MATH,
    description="one-digit addition and subtraction (offline, bundled); a reply without a \\boxed{} answer "
    "pays -0.1, so a small model has a signal before it can solve anything",
    dataset_name="arithmetic-easy",
    use_format_error_reward=True,
)
for _name, _hub in {
    "ASDiv2K": "axon-rl/ASDIV-2k",
    "GSM8K": "axon-rl/GSM-8k",
    "Math12K": "axon-rl/MATH-12k",
    "Math8K-3to5": "axon-rl/MATH-lvl3to5-8k",
    "Orz57K": "axon-rl/ORZ-57k",
    "DeepScaleR40K": "axon-rl/DeepScaleR-40K",
}.items():
    register(f"math:{_name}", _MATH, description=f"math problems from {_hub}", extra="math",
             dataset_name=_hub, question_key="problem", answer_key="answer")
register(
    "math:Geometry3K",
    "gem.envs.math_env:MathVisualEnv",
    description="geometry problems with a diagram in info['images'] (axon-rl/geometry3k)",
    extra="math",
    dataset_name="axon-rl/geometry3k",
    split="train",
    image_key="images",
    question_key="problem",
    answer_key="answer",
)
for _name, _split in {
    "MATH500": "math", "AMC": "amc", "OlympiadBench": "olympiad_bench", "Minerva": "minerva", "AIME24": "aime24",
}.items():
    register(f"eval:{_name}", _MATH, description=f"math evaluation set (axon-rl/math-eval, {_split})",
             extra="math", dataset_name="axon-rl/math-eval", split=_split, question_key="problem",
             answer_key="answer", eval=True)
for _depth in range(6):  # GEM registers d0, d1, d2, d3, d5; d4 is here too
    register(f"logic:RuleTaker-d{_depth}", _LOGIC,
             description=f"RuleTaker rule reasoning, proof depth {_depth} (axon-rl/RuleTaker-d{_depth}-70k)",
             extra="qa", dataset_name=f"axon-rl/RuleTaker-d{_depth}-70k", split="train",
             extract_boxed=True, question_key="question", answer_key="answer")
    register(f"logic:RuleReasoning-d{_depth}", "gem.envs.logic_env:RuleReasoningEnv",
             description=f"generated facts and rules, True/False/Unknown, proof depth {_depth} (offline)",
             depth=_depth)
for _name, _hub in {"NaturalQuestions": "axon-rl/NaturalQuestions", "HotpotQA": "axon-rl/HotpotQA"}.items():
    register(f"qa:{_name}", _QA, description=f"open-domain questions from {_hub}", extra="qa",
             dataset_name=_hub, split="train", question_key="problem", answer_key="answer")
register("eval:QaOpen", _QA, description="NQ-open validation questions (google-research-datasets/nq_open)",
         extra="qa", dataset_name="google-research-datasets/nq_open", split="validation",
         question_key="question", answer_key="answer", eval=True)
# The search-QA evaluation splits and their id names (public: gem.envs.data_names).
data_names = [
    ("2wiki", "2Wiki"), ("popqa", "PopQA"), ("tq", "TriviaQA"), ("hotpotqa", "HotpotQA"),
    ("bamboogle", "Bamboogle"), ("nq", "NaturalQuestions"), ("musique", "Musique"),
]
for _split, _name in data_names:
    register(f"eval:{_name}", _QA, description=f"search-QA evaluation set (axon-rl/search-eval, {_split})",
             extra="qa", dataset_name="axon-rl/search-eval", split=_split, question_key="question",
             answer_key="answer", eval=True)


def _register_rg_namespace() -> None:
    from gem.envs import _reasoning_gym_registry as rg_ids
    from gem.envs.registration import register_namespace

    register_namespace(rg_ids.PREFIX, rg_ids.resolve, rg_ids.list_ids, note=rg_ids.missing_note)


_register_rg_namespace()

# ------------------------------------------------------ code
# Programs judged by their tests in gem.sandbox. Hub ids need the `code` extra and network
# (or dataset_name="/path/to/copy.jsonl"); code:Bundled ships with the package.
register(
    "code:Bundled",
    "gem.envs.code_env:CodeEnv",
    description="46 bundled programming problems, easy to hard, stdin/stdout and function-call tests",
    dataset_name="code_problems",
    split="train",
)
for _id, _hub, _split, _what in (
    ("code:CodeContest", "axon-rl/CodeContest", "train", "CodeContests problems (train split)"),
    ("code:Taco8k", "axon-rl/TACO-8k", "train", "TACO problems (8k)"),
    ("code:PrimeIntellect15k", "axon-rl/PrimeIntellect-15k", "train", "PrimeIntellect verifiable coding problems (15k)"),
    ("eval:CodeContest", "axon-rl/CodeContest", "test", "CodeContests test split, in order"),
):
    register(
        _id,
        "gem.envs.code_env:CodeEnv",
        description=_what,
        extra="code",
        dataset_name=_hub,
        split=_split,
        question_key="problem",
        test_key="tests",
        **({"eval": True} if _id.startswith("eval:") else {}),
    )

# ------------------------------------------------------ search QA
# Questions about a generated fictional world; wrap with ToolEnvWrapper(SearchTool) over a server
# that indexes env.write_corpus(path) (see docs/search.md).
register(
    "qa:FictionalSearch",
    "gem.envs.qa_search.env:FictionalSearchQAEnv",
    description="questions about an invented world, answered by searching its corpus (1-3 hops)",
    extra="search",
    hops=(1, 2, 3),
)
register(
    "qa:FictionalSearch-MultiHop",
    "gem.envs.qa_search.env:FictionalSearchQAEnv",
    description="multi-hop questions about an invented world (2-3 documents per answer)",
    extra="search",
    hops=(2, 3),
)

# ------------------------------------------------------ multi-agent
_MULTI_GAMES = {
    "TicTacToe": ("gem.envs.multiagent.tictactoe:TicTacToeEnv", "Tic-Tac-Toe, two agents (perfect information)"),
    "KuhnPoker": ("gem.envs.multiagent.kuhn_poker:KuhnPokerEnv", "one hand of Kuhn poker (hidden cards)"),
    "Negotiation": ("gem.envs.multiagent.negotiation:NegotiationEnv",
                    "split items with private values by proposals and messages"),
}
for _name, (_entry, _desc) in _MULTI_GAMES.items():
    # the raw game (a gem.MultiAgentEnv: dict actions, checked by check_multiagent_env) ...
    register(f"multi:{_name}-v0", _entry, description=f"{_desc}; multi-agent API")
    # ... and single-agent views: the learner is player_0, the other seat a fixed player
    for _opponent in ("scripted", "random"):
        register(
            f"multi:{_name}-v0-vs-{_opponent}",
            "gem.envs.multiagent.single_agent:SingleAgentView",
            description=f"{_desc}; as player_0 against the {_opponent} player",
            game=f"multi:{_name}-v0",
            learner="player_0",
            opponents=_opponent,
        )

# ------------------------------------------------------ web: WebShop, WikiGame (offline by default)
for _split in ("train", "test"):
    for _mode in ("html", "text", "text_rich"):
        register(
            f"webshop:{_split}-{_mode}",
            "gem.envs.webshop.webshop:WebshopEnv",
            description=f"buy the product an instruction describes in a bundled shop ({_split} goals, {_mode} pages)",
            extra="search",
            observation_mode=_mode,
            split=_split,
            max_turns=15,
            error_tolerance=15,
            format_error_reward=-0.1,
        )
for _preset, (_turns, _path) in {"easy": (30, (2, 3)), "hard": (15, (4, 6))}.items():
    register(
        f"game:WikiGame-v0-{_preset}",
        "gem.envs.game_env.wikigame:WikiGameEnv",
        description=f"reach a target article by following links, {_path[0]}-{_path[1]} links apart (bundled wiki)",
        max_turns=_turns,
        backend="offline",
        variant="noregrets",
        page_summary_length=(300, "characters"),
        shortest_path=_path,
    )

# ------------------------------------------------------ multi-agent: customer service with a simulated user
register(
    "multi:CustomerService-v0",
    "gem.envs.multiagent.customer_service.env:CustomerServiceEnv",
    description="retail customer service (tau-bench style): an assistant with tools and a user with a hidden goal",
)
register(
    "multi:CustomerService-v0-vs-scripted",
    "gem.envs.multiagent.single_agent:SingleAgentView",
    description="retail customer service as the assistant, against a scripted customer (offline)",
    game="multi:CustomerService-v0",
    learner="assistant",
    opponents="scripted",
)

# ------------------------------------------------------ terminal and SWE tasks
# A shell (and file editing) in the sandbox; hidden tests run on a copy of the workspace in a fresh
# sandbox run (docs/terminal.md, docs/swe.md). terminal:<Task> and swe:<Task> name one bundled task
# each (resolved on first use); the Bundled ids draw a task per seed.
register(
    "terminal:Bundled",
    "gem.envs.terminal.env:TerminalEnv",
    description="bundled shell tasks (files, text, archives, permissions, scripts, CSV/JSON), one per seed",
    tasks="bundled",
)
register(
    "swe:Bundled",
    "gem.envs.swe.env:SweEnv",
    description="bundled repository bug fixes: an issue, a shell and a file editor, hidden tests; one per seed",
    tasks="bundled",
)


def _register_task_namespaces() -> None:
    from gem.envs.terminal.registry import register_task_namespaces

    register_task_namespaces()


_register_task_namespaces()

"""Training data and rewards: episodes become the right single-turn examples, the official train
schema loads, and completions earn what docs/protocol.md §4 and the reward table of
docs/training.md say.

Expected states and answer keys below are worked out by hand from docs/protocol.md §5 for the
hand-written records of `handmade.py`, not computed with the code under test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("datasets")

from PIL import Image

import handmade
from proactivebench.benchmark.registry import make_episode
from proactivebench.core.errors import DataError
from proactivebench.train.examples import (
    infer_scenario,
    load_examples,
    parse_holdout,
    scenario_counts,
)
from proactivebench.train.rewards import (
    FormatReward,
    ProactiveReward,
    RewardSettings,
    is_well_formed,
    outcome_reward,
)

MOVES = ["Move the blocks to the left.", "Move the blocks to the right."]


def completions(*texts: str) -> list[list[dict[str, str]]]:
    """Completions as TRL passes them for conversational prompts."""
    return [[{"role": "assistant", "content": t}] for t in texts]


def reward_of(row: dict[str, Any], *texts: str, settings: RewardSettings | None = None):
    """The answer reward of each text at the state `row` shows."""
    n = len(texts)
    return ProactiveReward(settings)(
        prompts=[row["prompt"]] * n,
        completions=completions(*texts),
        ground_truth=[row["ground_truth"]] * n,
        proactive_actions=[row["proactive_actions"]] * n,
        options=[row["options"]] * n,
        action_count=[row["action_count"]] * n,
        scenario=[row["scenario"]] * n,
    )


@pytest.fixture(scope="module")
def handmade_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return handmade.write_dataset(
        tmp_path_factory.mktemp("handmade"),
        {"ROD": [handmade.rod(0)], "MVP-N": [handmade.mvpn(5)], "IN-C": [handmade.inc(2)]},
    )


@pytest.fixture(scope="module")
def rows(handmade_dir: Path) -> dict[str, list[dict[str, Any]]]:
    dataset = load_examples(handmade_dir)
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for row in dataset:
        by_scenario.setdefault(row["scenario"], []).append(row)
    return by_scenario


def image_paths(row: dict[str, Any]) -> str:
    return row["prompt"][0]["content"][1]["text"]


def test_rod_episode_becomes_its_five_states(rows: dict[str, list[dict[str, Any]]]) -> None:
    # ROD, 4 images, start at 2: turn 1 shows image 2 with no category accepted; LEFT/RIGHT
    # reach 1 and 3, then 0 and 2 again (now the category is accepted). 5 distinct states.
    rod = rows["ROD"]
    assert len(rod) == 5
    assert [r["ground_truth"] for r in rod] == ["", "cup", "cup", "cup", "cup"]
    assert all(r["proactive_actions"] == MOVES for r in rod)
    assert all(r["action_count"] == 4 for r in rod)
    assert rod[0]["options"] == [*MOVES, *handmade.ABSTAIN, *handmade.CATS]
    assert [r["state"] for r in rod] == [0, 1, 2, 3, 4]
    # Each prompt is one user message: an image placeholder, then the lettered MCQA text.
    content = rod[0]["prompt"][0]["content"]
    assert rod[0]["prompt"][0]["role"] == "user"
    assert content[0]["type"] == "image" and content[1]["type"] == "text"
    assert "A. Move the blocks to the left.\n" in content[1]["text"]
    assert "G. cup\n" in content[1]["text"]
    assert all(len(r["images"]) == 1 and isinstance(r["images"][0], Image.Image) for r in rod)


def test_mvpn_and_inc_last_turn_accepts_only_the_category(
    rows: dict[str, list[dict[str, Any]]],
) -> None:
    # MVP-N, 3 turns over views 7, 3, 9: the rotation is accepted before the last turn only.
    assert [r["proactive_actions"] for r in rows["MVP-N"]] == [["Rotate the object."]] * 2 + [[]]
    assert {r["ground_truth"] for r in rows["MVP-N"]} == {"apple"}
    # IN-C from level 5 to 1: only the quality answer is accepted, and not on the last turn.
    inc = rows["IN-C"]
    assert [r["proactive_actions"] for r in inc] == [["Deblur the image."]] * 4 + [[]]
    assert {r["ground_truth"] for r in inc} == {"banana"} and inc[0]["action_count"] == 10


def test_rewards_per_completion_follow_the_spec(rows: dict[str, list[dict[str, Any]]]) -> None:
    first, later = rows["ROD"][0], rows["ROD"][1]
    # Options: A/B the moves, C/D abstentions, E apple, F banana, G cup (correct), H dog.
    assert reward_of(later, "G", "G. cup", "cup") == [1.0, 1.0, 1.0]
    assert reward_of(later, "A", "Move the blocks to the right.") == [0.5, 0.5]
    assert reward_of(later, "D", "I cannot answer.", "E", "dog") == [0.0] * 4
    assert reward_of(later, "xq!? garbage", "", "Z", "I think it is a cup") == [0.0] * 4
    # On the first turn nothing can be seen: an intervention earns the full 1, the category 0.
    assert reward_of(first, "B", "G") == [1.0, 0.0]
    custom = RewardSettings(intervention_when_answerable=0.25, category=2.0)
    assert reward_of(later, "A", "G", settings=custom) == [0.25, 2.0]


def test_lenient_reading_is_an_option(rows: dict[str, list[dict[str, Any]]]) -> None:
    later = rows["ROD"][1]
    decorated = "<think>the cup is visible</think>**Answer: (G)**"
    assert reward_of(later, decorated) == [0.0]
    lenient = RewardSettings(answer_extraction="lenient")
    assert reward_of(later, decorated, settings=lenient) == [1.0]


def test_reward_logs_mean_and_std_per_scenario(rows: dict[str, list[dict[str, Any]]]) -> None:
    rod, mvpn = rows["ROD"][1], rows["MVP-N"][0]  # MVP-N: A rotate, D apple (correct)
    logged: dict[str, float] = {}
    picked = [rod, rod, mvpn]
    ProactiveReward()(
        prompts=[r["prompt"] for r in picked],
        completions=completions("G", "A", "D"),
        ground_truth=[r["ground_truth"] for r in picked],
        proactive_actions=[r["proactive_actions"] for r in picked],
        options=[r["options"] for r in picked],
        action_count=[r["action_count"] for r in picked],
        scenario=[r["scenario"] for r in picked],
        log_metric=logged.__setitem__,
    )
    assert logged["rewards/proactive/ROD/mean"] == pytest.approx(0.75)
    assert logged["rewards/proactive/ROD/std"] == pytest.approx(0.3535534, rel=1e-5)
    assert logged["rewards/proactive/MVP-N/mean"] == 1.0
    assert logged["rewards/proactive/MVP-N/std"] == 0.0


def test_format_reward() -> None:
    options = ["Move left.", "I do not know.", "cup", "dog"]
    assert is_well_formed("C", options) and is_well_formed(" c. ", options)
    assert is_well_formed("C. cup", options) and is_well_formed("dog", options)
    assert not is_well_formed("C. dog", options) and not is_well_formed("E", options)
    assert not is_well_formed("The answer is C", options) and not is_well_formed("", options)
    got = FormatReward()(
        prompts=[[]] * 2, completions=completions("B", "hmm"), options=[options] * 2
    )
    assert got == [1.0, 0.0]


def letter(row: dict[str, Any], option: str) -> str:
    return chr(ord("A") + row["options"].index(option))


def test_always_intervening_earns_less_than_answering(synth_train: Path) -> None:
    """Under the defaults, at every state where the category is accepted, intervening earns
    less than answering, so "always ask" is not optimal; with 1 for every intervention it
    would tie (the failure the issue reports)."""
    dataset = load_examples(synth_train)
    ask, answer = [], []
    flat = RewardSettings(intervention_when_answerable=1.0)
    ask_flat = []
    for row in dataset:
        if not (row["ground_truth"] and row["proactive_actions"]):
            continue
        move = letter(row, row["proactive_actions"][0])
        category = letter(row, row["ground_truth"])
        ask += reward_of(row, move)
        answer += reward_of(row, category)
        ask_flat += reward_of(row, move, settings=flat)
    assert len(ask) > 20
    assert all(a < b for a, b in zip(ask, answer, strict=True))
    assert sum(ask) / len(ask) < sum(answer) / len(answer)
    assert ask_flat == answer  # the old reward could not tell asking from answering


def test_outcome_reward_of_always_asking_is_zero(handmade_dir: Path) -> None:
    # Multi-turn: an episode that always intervenes runs out of turns without an answer.
    from proactivebench.data.directory import load_dataset

    for records in load_dataset(handmade_dir).records.values():
        for record in records:
            episode = make_episode(record)
            step = None
            while not episode.done:
                obs = episode.observation
                step = episode.step(
                    obs.correct_actions[0] if obs.correct_actions else "I do not know."
                )
            assert step is not None and not step.correct
            assert outcome_reward(step.correct, episode.num_turns) == 0.0
    assert outcome_reward(True, 3) == 1.0
    assert outcome_reward(True, 3, turn_cost=0.1) == pytest.approx(0.8)


def test_holdout_removes_every_row_of_a_scenario(handmade_dir: Path) -> None:
    dataset = load_examples(handmade_dir, holdout="mvp-n,IN-C")
    assert scenario_counts(dataset) == {"ROD": 5}
    with pytest.raises(DataError, match="every scenario"):
        load_examples(handmade_dir, holdout=["ROD", "MVP-N", "IN-C"])
    with pytest.raises(DataError, match="unknown scenario 'XYZ'"):
        parse_holdout("ROD,XYZ")


# ----- the official train schema -------------------------------------------------------------


def official_rows() -> list[dict[str, Any]]:
    """Rows shaped like the official train split: options lettered in the prompt text."""
    image = Image.new("RGB", (32, 24), (200, 10, 10))

    def prompt(text: str) -> list[dict[str, Any]]:
        return [
            {
                "role": "user",
                "content": [{"type": "image", "text": None}, {"type": "text", "text": text}],
            }
        ]

    return [
        {
            "prompt": prompt("Which object is behind the blocks? Options: A. ..."),
            "ground_truth": "cup",
            "proactive_actions": ["Move the blocks to the left.", "Move the blocks to the right."],
            "options": [*MOVES, "I do not know.", "apple", "cup"],
            "images": [image],
            "confidence_llava": 0.25,
        },
        {
            "prompt": prompt("This is a frame extracted from a video. What is it?"),
            "ground_truth": "dog",
            "proactive_actions": ["Rewind the video."],
            "options": [
                "Wait for the occlusion to disappear.",
                "Rewind the video.",
                "I cannot answer.",
                "cat",
                "dog",
            ],
            "images": [image],
            "confidence_llava": 0.5,
        },
    ]


def write_official_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    import datasets

    features = datasets.Features(
        {
            "prompt": [
                {
                    "content": [
                        {"type": datasets.Value("string"), "text": datasets.Value("string")}
                    ],
                    "role": datasets.Value("string"),
                }
            ],
            "ground_truth": datasets.Value("string"),
            "proactive_actions": datasets.List(datasets.Value("string")),
            "options": datasets.List(datasets.Value("string")),
            "images": datasets.List(datasets.Image()),
            "confidence_llava": datasets.Value("float32"),
        }
    )
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(path))
    return path


def test_official_parquet_loads_in_our_format(tmp_path: Path) -> None:
    path = write_official_parquet(tmp_path / "train.parquet", official_rows())
    dataset = load_examples(path)
    assert len(dataset) == 2
    first, second = dataset[0], dataset[1]
    assert "confidence_llava" not in dataset.column_names
    assert [first["scenario"], second["scenario"]] == ["ROD", "VSOD"]
    assert first["action_count"] == 3 and second["action_count"] == 3
    assert isinstance(first["images"][0], Image.Image) and first["images"][0].size == (32, 24)
    assert first["prompt"][0]["content"][1]["text"].startswith("Which object")
    # Read like the benchmark: B is the right move (0.5 once the category is accepted), E cup.
    assert reward_of(first, "B", "E", "D", "C") == [0.5, 1.0, 0.0, 0.0]
    assert reward_of(second, "A") == [0.0]  # waiting is shown but not accepted in this row
    assert scenario_counts(load_examples(path, holdout="VSOD")) == {"ROD": 1}


def test_bad_official_row_names_row_and_column(tmp_path: Path) -> None:
    rows = official_rows()
    rows[1]["ground_truth"] = "zebra"
    path = write_official_parquet(tmp_path / "bad.parquet", rows)
    with pytest.raises(DataError, match=r"bad\.parquet:2: field 'ground_truth': 'zebra' is not"):
        load_examples(path)
    with pytest.raises(DataError, match=r"expected a \.parquet"):
        (tmp_path / "x.csv").write_text("a\n")
        load_examples(tmp_path / "x.csv")
    with pytest.raises(DataError, match="not found"):
        load_examples(tmp_path / "missing")


def test_scenario_is_told_by_the_interventions() -> None:
    assert infer_scenario(["Rotate the object.", "I do not know."]) == "MVP-N"
    assert infer_scenario(["Increase the contrast.", "Deblur the image."]) == "IN-C"
    assert infer_scenario(["Add more details to the drawing."]) == "QD"
    assert infer_scenario(["Move the camera up.", "I cannot answer."]) == "COCO"
    assert infer_scenario(["Rewind the video.", "Wait for the object to appear."]) == "CIT"
    assert infer_scenario(["I do not know."]) == "unknown"


def test_hub_source_failure_is_one_message(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    def unreachable(repo: str, split: str) -> None:
        assert (repo, split) == ("tdemin16/ProactiveBench", "train")
        raise ConnectionError("Couldn't reach 'tdemin16/ProactiveBench' on the Hub (offline)")

    monkeypatch.setattr(datasets, "load_dataset", unreachable)
    with pytest.raises(DataError, match="cannot load the train split of tdemin16/ProactiveBench"):
        load_examples("hub")


def test_a_file_without_the_official_columns_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.jsonl"
    path.write_text('{"question": "what?", "answer": "cup"}\n')
    with pytest.raises(DataError, match="not the official train schema: no column prompt"):
        load_examples(path)

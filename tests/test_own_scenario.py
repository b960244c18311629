"""A scenario of one's own, registered from outside the package, is a scenario like the seven.

The toy here, DIM, is a photo taken in a dark room: each "turn up the lamp" shows the next,
brighter exposure. It brings what a registration takes and nothing else (its record type
with a field of its own, its episode, its strings, its generator, a plot marker and how
training recognises its rows), and the test then generates, loads, plays, reports and trains
on it through the package's ordinary entry points, without touching a package file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from PIL import Image

from proactivebench import (
    EvalSettings,
    ScenarioInfo,
    evaluate,
    load_model,
    make_episode,
    register_scenario,
    unregister_scenario,
    write_report,
)
from proactivebench.benchmark.protocol import ScenarioStrings
from proactivebench.benchmark.records import Fields, Record
from proactivebench.benchmark.registry import scenario_names
from proactivebench.benchmark.scenarios.base import Episode, Halt
from proactivebench.data.directory import load_dataset
from proactivebench.data.synth import generate
from proactivebench.data.synth.common import Sample
from proactivebench.report.plots import scenario_marker

SHORT = "DIM"
#: Its intervention names its own action (DIMMER), by its own keyword.
LAMP = "Turn the lamp's dimmer up."
CATEGORIES = ("cat", "chair", "lamp post", "teapot")
STRINGS = ScenarioStrings(
    short=SHORT,
    stem="DimRoom",
    dataset_file="DimRoom_preprocessed.jsonl",
    pre_prompt="The photo was taken in a dark room.",
    hint_prompt="Hint: more light could help.",
    reference_prompt=None,
    cot_prompt=None,
    oeg_proactive_count=1,
    oeg_answers="Turn up the lamp, {categories}.",
)


@dataclass(frozen=True)
class DimRecord(Record):
    scenario: ClassVar[str] = SHORT
    #: A field only this scenario has: which lamp lights the room.
    lamp: str = ""

    @classmethod
    def read_extra(cls, fields: Fields) -> dict[str, Any]:
        return {"lamp": fields.str("lamp")}


class DimEpisode(Episode):
    """DIMMER shows the next exposure; the darkest one takes no category, the last one only
    the category."""

    scenario = SHORT
    record_type = DimRecord
    # Its own keyword: the protocol's table knows no dimmer.
    keywords = (("dimmer", "DIMMER"),)

    @classmethod
    def strings(cls) -> ScenarioStrings:
        return STRINGS

    def action_space(self) -> tuple[str, ...]:
        return ("DIMMER",)

    def _actions_allowed(self) -> bool:
        return not self.is_last_turn

    def _category_allowed(self) -> bool:
        return int(self.image_id) > 0

    def _category_refusal(self) -> str:
        return "too dark to tell on the first exposure"

    def _transition(self, action: str) -> Halt | None:
        self.image_id = int(self.image_id) + 1
        return None

    def reachable_images(self) -> Iterator[str]:
        first = self.record.first_image
        return map(self._image_path, range(first, first + self.record.num_images))


def make_dim_sample(rng: np.random.Generator, index: int, slot: int) -> Sample:
    """Three exposures of one grey square, darkest first."""
    answer = CATEGORIES[int(rng.integers(len(CATEGORIES)))]
    folder = f"{STRINGS.stem}/{index:06d}"
    images = {f"{folder}/{k}.png": Image.new("RGB", (32, 32), (20 + 80 * k,) * 3) for k in range(3)}
    record = {
        "id": index,
        "image_template": f"{folder}/{{image}}.png",
        "first_image": 0,
        "num_images": 3,
        "reference_image": 2,
        "prompt": "What is in the photo?",
        "options": [LAMP, "I cannot tell."],
        "categories": list(CATEGORIES),
        "answer": answer,
        "lamp": "desk lamp",
    }
    return Sample(record, images)


@pytest.fixture
def dim() -> Iterator[ScenarioInfo]:
    info = register_scenario(
        ScenarioInfo(
            DimEpisode,
            generate=make_dim_sample,
            marker="*",
            recognise=lambda cues: "DIMMER" in cues.actions,  # its own keyword's action
            recognise_rank=0,
        )
    )
    try:
        yield info
    finally:
        unregister_scenario(SHORT)
    assert SHORT not in scenario_names()


@pytest.fixture
def data(dim: ScenarioInfo, tmp_path: Path) -> Path:
    root = tmp_path / "data"
    manifest = generate(root, per_scenario=3, scenarios=["ROD", SHORT])
    assert manifest["counts"] == {"ROD": 3, SHORT: 3}
    return root


def test_registered_after_the_seven_and_refused_twice(dim: ScenarioInfo) -> None:
    assert scenario_names()[-1] == SHORT and len(scenario_names()) == 8
    with pytest.raises(ValueError, match="already has its name or data file"):
        register_scenario(ScenarioInfo(DimEpisode))
    with pytest.raises(ValueError, match="stays registered"):
        unregister_scenario("ROD")


def test_a_generator_naming_its_images_otherwise_than_its_episode_is_refused(
    dim: ScenarioInfo, tmp_path: Path
) -> None:
    """The image names are the record's template as the episode fills it: a generator that
    wrote "frame-0.png" for a template of "{image}.png" made data on which every episode
    failed with "image not found", found only when played (issue 46 item 3)."""

    def renamed(rng: np.random.Generator, index: int, slot: int) -> Sample:
        sample = make_dim_sample(rng, index, slot)
        images = {
            path.replace("/", "/frame-", 1) if path.endswith(".png") else path: image
            for path, image in sample.images.items()
        }
        return Sample(sample.record, images)

    unregister_scenario(SHORT)
    register_scenario(ScenarioInfo(DimEpisode, generate=renamed))
    with pytest.raises(ValueError, match=rf"the {SHORT} generator's sample 0 has no image "):
        generate(tmp_path / "data", per_scenario=1, scenarios=[SHORT])
    assert not (tmp_path / "data").exists()  # nothing written


def test_loaded_with_its_own_field_and_played(data: Path) -> None:
    dataset = load_dataset(data)
    records = dataset.records[SHORT]
    assert [type(r) for r in records] == [DimRecord] * 3 and records[0].lamp == "desk lamp"
    episode = make_episode(records[0])
    first = episode.reset()
    assert first.prompt == "The photo was taken in a dark room. What is in the photo?"
    assert first.view.image.endswith("/0.png") and first.correct_actions == (LAMP,)
    step = episode.step("A")  # the lamp
    assert step.verdict == "proactive" and step.observation is not None
    assert step.observation.view.image.endswith("/1.png")


def test_evaluated_and_reported(data: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    outcome = evaluate(data, load_model("baseline:oracle"), run, EvalSettings())
    lines = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
    dim_lines = [line for line in lines if line["scenario"] == SHORT]
    # The oracle turns the lamp up once, then names the category on the second exposure.
    assert len(dim_lines) == 3 and all(x["correct"] and x["num_turns"] == 2 for x in dim_lines)
    assert list(outcome.summary.scenarios) == ["ROD", SHORT]
    assert outcome.summary.average_label == "average of 2 (ROD, DIM)"
    report = write_report([run], run / "report").out_dir
    scores = json.loads((report / "report.json").read_text())["runs"][0]["scenarios"][SHORT]
    assert scores["n"] == 3 and scores["accuracy"]["value"] == 100.0
    assert scores["ps_rate"]["value"] == 1.0  # one lamp per episode
    assert (report / "plots" / "accuracy_vs_ps.png").is_file()
    assert SHORT in (report / "report.html").read_text(encoding="utf-8")
    assert scenario_marker(SHORT) == "*" and scenario_marker("ROD") == "o"


def test_training_recognises_its_rows_and_trains(
    data: Path, tiny_vlm_dir: Path, tmp_path: Path
) -> None:
    pytest.importorskip("trl")
    from proactivebench.train.examples import infer_scenario, scenario_counts
    from proactivebench.train.grpo import TrainSettings, train_grpo, training_data

    assert infer_scenario([LAMP, "I cannot tell."]) == SHORT
    assert infer_scenario(["Increase the brightness.", "I cannot tell."]) == "IN-C"
    config = {
        "per_device_train_batch_size": 4,
        "num_generations": 4,
        "max_completion_length": 2,
        "max_steps": 1,
        "activation_checkpointing": False,
        "seed": 7,
    }
    settings = TrainSettings.build(
        str(tiny_vlm_dir), str(data), tmp_path / "trained", config=config, holdout="ROD"
    )
    assert scenario_counts(training_data(settings)) == {SHORT: 9}  # 3 records x 3 exposures
    outcome = train_grpo(settings)
    run = json.loads((outcome.out_dir / "train_run.json").read_text())
    assert run["trained_on"] == [SHORT] and run["held_out"] == ["ROD"]
    state = json.loads((outcome.out_dir / "trainer_state.json").read_text())
    (step,) = [entry for entry in state["log_history"] if "loss" in entry]
    assert f"rewards/proactive/{SHORT}/mean" in step  # its rewards logged under its name

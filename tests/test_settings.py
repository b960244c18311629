"""Run settings are declared once (proactivebench.run.settings): every surface derives from the
declaration. A setting added in one place must appear everywhere it can be honoured."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click
import pytest

from proactivebench.cli import cli
from proactivebench.cli.options import setting_options
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.run.settings import EvalSettings, RunOptions, declared, offered, setting
from proactivebench.train.checks import episode_settings

#: EvalSettings with one more flag, declared as a new setting would be.
Extended = dataclasses.make_dataclass(
    "Extended",
    [
        (
            "shout",
            bool,
            setting(False, kind="episode", builds_episode=True, help="Ask in capitals."),
        )
    ],
    bases=(EvalSettings,),
    frozen=True,
)


def options_of(settings: type, surface: str = "cli") -> dict[str, click.Option]:
    @click.command()
    @setting_options(settings, surface)  # type: ignore[arg-type]
    def command(**values: object) -> None:
        pass

    return {o.name: o for o in command.params if isinstance(o, click.Option)}


def test_a_new_setting_appears_on_every_surface() -> None:
    option = options_of(Extended)["shout"]
    assert option.opts == ["--shout"] and option.is_flag and option.help == "Ask in capitals."
    assert "shout" in options_of(Extended, "train")
    assert "shout" in episode_settings(Extended)
    inspect_task = pytest.importorskip("proactivebench.adapters.inspect_task")
    assert inspect_task.task_signature(Extended).parameters["shout"].default is False
    verifiers_env = pytest.importorskip("proactivebench.adapters.verifiers_env")
    play = verifiers_env.config_model("Play", ("episode",), "", Extended)
    assert play.model_fields["shout"].default is False
    assert play.model_fields["shout"].description == "Ask in capitals."


def test_a_new_setting_is_part_of_the_run_identity_only_when_set() -> None:
    assert "shout" not in Extended().identity()  # older run directories still resume
    assert Extended(shout=True).identity()["shout"] is True
    assert Extended(shout=True).episode_options()["shout"] is True


def test_a_new_setting_is_type_checked_wherever_it_comes_from() -> None:
    with pytest.raises(ProactiveBenchError, match="shout must be true or false, got 'yes'"):
        Extended(shout="yes")


def test_the_identity_of_the_first_release_is_unchanged() -> None:
    """A default run's identity is what run.json has always held: older runs resume."""
    assert EvalSettings().identity() == {
        "hint": False,
        "reference": False,
        "random_actions": False,
        "seed": 0,
        "decoding": {"max_tokens": 50, "temperature": 0.0},
    }
    later = EvalSettings(history=True, icl=2, option_order="shuffled").identity()
    assert later["history"] is True and later["icl"] == 2 and later["option_order"] == "shuffled"
    assert "limit" not in EvalSettings(limit=3).identity()  # selection: a run may grow


def test_random_suggestions_reach_every_surface_but_training() -> None:
    """The paper's ablation (--random-suggestions) beside the reference code's
    (--random-actions): an episode setting built into the episode, recorded only when on, and
    offered wherever multiple-choice episodes are played; training refuses it (its examples
    show the records' own options), so `train grpo` has no such option."""
    spec = next(s for s in declared(EvalSettings) if s.name == "random_suggestions")
    assert spec.info.kind == "episode" and spec.info.builds_episode
    assert "random_suggestions" not in EvalSettings().identity()
    on = EvalSettings(random_suggestions=True)
    assert on.identity()["random_suggestions"] is True
    assert on.episode_options()["random_suggestions"] is True
    assert options_of(EvalSettings)["random_suggestions"].opts == ["--random-suggestions"]
    assert "random_suggestions" in options_of(EvalSettings, "play")
    assert "random_suggestions" not in options_of(EvalSettings, "train")
    assert "random_suggestions" not in episode_settings()
    inspect_task = pytest.importorskip("proactivebench.adapters.inspect_task")
    assert inspect_task.task_signature().parameters["random_suggestions"].default is False
    verifiers_env = pytest.importorskip("proactivebench.adapters.verifiers_env")
    assert "random_suggestions" in verifiers_env.ProactiveTasksetConfig.model_fields
    with pytest.raises(ProactiveBenchError, match="two different ablations"):
        EvalSettings(random_suggestions=True, random_actions=True)


def test_eval_offers_every_setting_it_can_take_with_its_help() -> None:
    eval_options = {o.name: o for o in cli.commands["eval"].params}
    for spec in offered(EvalSettings, "cli") + offered(RunOptions, "cli"):
        assert eval_options[spec.name].help == spec.info.help
    for spec in declared(EvalSettings) + declared(RunOptions):
        assert spec.info.help, f"{spec.name} has no help"


def test_judge_offers_the_execution_options_from_the_declaration() -> None:
    """`judge` runs as `eval` does: its `--concurrency` is RunOptions' own, with its default,
    range and the help written for judging."""
    judge_options = {o.name: o for o in cli.commands["judge"].params}
    offered_here = offered(RunOptions, "judge")
    assert [spec.name for spec in offered_here] == ["concurrency"]
    for spec in offered_here:
        option = judge_options[spec.name]
        assert option.help == spec.info.help_on("judge") != spec.info.help
        assert option.default == spec.default
        assert isinstance(option.type, click.IntRange) and option.type.min == spec.info.bounds.low


def test_training_offers_only_settings_that_build_episodes() -> None:
    """`train grpo` passes its episode options to make_episode."""
    for spec in offered(EvalSettings, "train"):
        assert spec.info.builds_episode, spec.name
    assert set(options_of(EvalSettings, "train")) == set(episode_settings())


def test_the_adapters_offer_what_the_declaration_says() -> None:
    inspect_task = pytest.importorskip("proactivebench.adapters.inspect_task")
    parameters = list(inspect_task.task_signature().parameters)
    assert parameters == [
        "data",
        *[s.name for s in offered(EvalSettings, "inspect")],
        "judge_votes",
    ]
    assert "decoding" not in parameters  # Inspect's own --max-tokens etc.
    verifiers_env = pytest.importorskip("proactivebench.adapters.verifiers_env")
    fields = set(verifiers_env.ProactiveTasksetConfig.model_fields)
    assert {s.name for s in offered(EvalSettings, "verifiers")} <= fields
    assert "history" not in fields and "icl" not in fields  # what a verifiers chat cannot honour


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"hint": "false"}, "hint must be true or false, got 'false'"),
        ({"icl": 1.5}, "icl must be an integer, got 1.5"),
        ({"limit": 0}, "limit must be >= 1, got 0"),
        ({"option_order": "sideways"}, "unknown option_order 'sideways'; choose from record"),
        ({"scenarios": 3}, "scenarios must be a comma-separated list"),
    ],
)
def test_bad_values_are_refused_by_name(values: dict, message: str) -> None:
    with pytest.raises(ProactiveBenchError, match=message):
        EvalSettings(**values)


def test_scenario_lists_are_read_alike_from_text_and_sequences() -> None:
    assert EvalSettings(scenarios="ROD, QD").scenarios == ("ROD", "QD")
    assert EvalSettings(scenarios=["ROD", "QD"]).scenarios == ("ROD", "QD")
    assert EvalSettings(scenarios="").scenarios is None
    assert EvalSettings(scenarios=",").scenarios == ("", "")  # refused by name when loading


def test_the_public_face_exports_what_it_lists() -> None:
    import proactivebench

    assert proactivebench.__all__ == sorted(proactivebench._EXPORTS)
    for name in proactivebench.__all__:
        assert getattr(proactivebench, name).__name__ == name
    errors = [n for n in proactivebench.__all__ if n.endswith(("Error", "Errors", "Abort"))]
    for name in errors:  # every error a user may catch is in errors.py, under one base
        error = getattr(proactivebench, name)
        assert error.__module__ == "proactivebench.core.errors"
        assert issubclass(error, proactivebench.ProactiveBenchError)


@pytest.mark.parametrize("with_filter", [False, True])
def test_every_selection_setting_given_comes_back_as_its_eval_option(
    tmp_path, with_filter: bool
) -> None:
    """The `eval` that plays a run again (`judge`'s replay) takes its selection from what the
    invocation recorded (`selected_by`): every selection setting the command line offers,
    set, is given back as its option, which eval parses to the same setting."""
    from proactivebench.cli.run import eval_command
    from proactivebench.run.settings import eval_arguments

    keep = tmp_path / "keep.json"
    keep.write_text('{"ids": {"Realistic-Occlusion-Dataset": [1]}}')
    given = {"scenarios": ("QD", "ROD"), "limit": 2, "subset": 3, "max_image_mb": 7}
    given |= {"filter": str(keep)} if with_filter else {"all_samples": True}
    chosen = {s.name for s in offered(EvalSettings, "cli", ("selection",))}
    assert chosen == {*given, "filter", "all_samples"}  # a new selection setting: add it above
    settings = EvalSettings(**given)
    arguments = eval_arguments(settings.identity(), settings.selected_by())
    context = eval_command.make_context(
        "eval", ["--data", "d", "--model", "m", "--out", "o", *arguments]
    )
    parsed = {k: context.params[k] for k in chosen}
    if isinstance(parsed["scenarios"], str):
        parsed["scenarios"] = tuple(parsed["scenarios"].split(","))
    assert EvalSettings(**parsed).selected_by() == settings.selected_by() != {}


def test_a_runs_label_and_plain_status_follow_the_settings_declaration() -> None:
    """The report's labels came from a hand list beside the declaration: a new episode
    setting was labelled like a zero-shot run, taken for the plain run and placed in Table 1
    (issue 46 item 2). Every episode setting now marks a label by its declaration, one
    without a `label` as "name=value", unless declared `unlabelled` (the seed, decoding)."""
    from dataclasses import dataclass

    from proactivebench.report.comparable import table_of
    from proactivebench.run.settings import EvalSettings, declared, label_marks, setting

    episode = [s for s in declared(EvalSettings) if s.info.kind == "episode"]
    assert {s.name for s in episode if s.info.unlabelled} == {"seed", "decoding"}
    for spec in episode:
        if not spec.info.unlabelled:
            assert spec.info.label is not None, spec.name  # the package's own say how
    hinted = EvalSettings(hint=True, icl=3).identity()
    assert label_marks(EvalSettings, hinted) == [("hint", "hint"), ("icl", "ICL-3")]
    assert label_marks(EvalSettings, EvalSettings(seed=7).identity()) == []

    @dataclass(frozen=True)
    class WithLens(EvalSettings):
        lens: bool = setting(False, kind="episode", help="Look through a lens.")

    assert label_marks(WithLens, {"lens": True}) == [("lens", "lens=True")]
    assert table_of("mcqa", {}) == "table1_mcqa"
    assert table_of("mcqa", {"hint": True}) != "table1_mcqa"


def test_an_execution_option_reaches_the_run_as_declared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`eval`, `judge` and the suites took `concurrency` by name and rebuilt `RunOptions` by
    hand: any other field offered on the command line was a TypeError (issue 46 item 2). The
    commands now get one `options` built from what the declaration offers."""
    from dataclasses import dataclass

    import click
    from click.testing import CliRunner

    from proactivebench.cli.options import run_options
    from proactivebench.core.ranges import Range
    from proactivebench.jobs import evaluate as runner
    from proactivebench.run.settings import RunOptions, setting

    @dataclass(frozen=True)
    class MoreOptions(RunOptions):
        lanes: int = setting(2, kind="execution", bounds=Range(1, integer=True), help="Lanes.")

    got = []

    @click.command()
    @run_options("cli", MoreOptions)
    def command(options: MoreOptions) -> None:
        got.append(options)

    result = CliRunner().invoke(command, ["--lanes", "5", "--concurrency", "3"])
    assert result.exit_code == 0, result.output
    assert got == [MoreOptions(concurrency=3, lanes=5)]
    # And eval hands the run what its options said.
    seen = []
    monkeypatch.setattr(runner, "evaluate", lambda *a, **k: seen.append(k["options"]) or 1 / 0)
    from proactivebench.data.synth import generate

    generate(tmp_path / "data", per_scenario=1, seed=0)
    args = ["eval", "--data", str(tmp_path / "data"), "--model", "baseline:oracle"]
    CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "run"), "--concurrency", "3"])
    assert seen == [RunOptions(concurrency=3)]

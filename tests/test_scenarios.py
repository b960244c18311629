"""Hand-computed episodes for every scenario rule of docs/protocol.md §3-5."""

from __future__ import annotations

import pytest

from handmade import ABSTAIN, CATS, INC_OPTIONS, record
from proactivebench.benchmark.protocol import scenario_strings
from proactivebench.benchmark.registry import make_episode


def play(episode, answers):
    """Feed answers until the episode ends; returns the verdicts and the views seen."""
    verdicts, images = [], []
    for answer in answers:
        images.append(episode.observation.view.image)
        verdicts.append(episode.step(answer).verdict)
        if episode.done:
            break
    return verdicts, images


# ----- ROD ----------------------------------------------------------------------------------


def test_rod_first_turn_category_fails() -> None:
    ep = make_episode(record("ROD"))
    obs = ep.reset()
    assert obs.correct_categories == ()
    step = ep.step("cup")  # correct category, but nothing can be seen yet
    assert (step.verdict, step.done, step.correct, ep.num_turns) == ("wrong", True, False, 1)


def test_rod_move_then_answer() -> None:
    ep = make_episode(record("ROD"))  # 4 frames, first_image 2
    assert ep.observation.view.image == "ROD/0/2.png"
    # Options A, B = moves; C, D = abstentions; E.. = categories (cup = G).
    assert ep.step("A").verdict == "proactive"  # LEFT: 2 -> 1
    assert ep.observation.view.image == "ROD/0/1.png"
    assert ep.observation.correct_categories == ("cup",)
    step = ep.step("G")
    assert (step.verdict, step.correct, ep.num_turns) == ("correct", True, 2)


def test_rod_moves_wrap_around_and_hit_the_step_limit() -> None:
    ep = make_episode(record("ROD", first_image=0))
    verdicts, images = play(ep, ["B. Move the blocks to the right."] * 10)
    assert images == ["ROD/0/0.png", "ROD/0/1.png", "ROD/0/2.png", "ROD/0/3.png"]
    assert verdicts == ["proactive"] * 4
    assert ep.done and not ep.correct and ep.num_turns == 4  # num_images steps
    ep = make_episode(record("ROD", first_image=0))
    ep.step("Move the blocks to the left.")
    assert ep.observation.view.image == "ROD/0/3.png"  # 0 - 1 mod 4


def test_rod_broken_banana_frame_is_swapped_by_last_action() -> None:
    template = "ROD/natural_bluebl_greenr-banana-s6/{image}.png"
    ep = make_episode(record("ROD", image_template=template, first_image=1))
    assert ep.observation.view.image == "ROD/natural_bluebl_greenr-banana-s7/1.png"
    ep.step("Move the blocks to the left.")
    assert ep.observation.view.image == "ROD/natural_bluebl_greenr-banana-s5/0.png"
    ep.step("Move the blocks to the right.")
    assert ep.observation.view.image == "ROD/natural_bluebl_greenr-banana-s7/1.png"
    # docs/protocol.md §8: only outside reference mode.
    ref = make_episode(record("ROD", image_template=template), reference=True)
    assert ref.observation.view.image == "ROD/natural_bluebl_greenr-banana-s6/ref.png"
    assert list(ref.image_paths()) == ["ROD/natural_bluebl_greenr-banana-s6/ref.png"]


def test_rod_abstaining_fails() -> None:
    ep = make_episode(record("ROD"))
    assert ep.step("C").verdict == "wrong"
    assert ep.done and not ep.correct


def test_rod_reference_mode() -> None:
    ep = make_episode(record("ROD"), reference=True)
    obs = ep.observation
    assert obs.view.image == "ROD/0/ref.png"
    assert obs.options == tuple(CATS) and len(obs.action_options) == 0
    assert obs.prompt == scenario_strings("ROD").reference_prompt
    step = ep.step("C")  # letters start at A over the categories: C = cup
    assert (step.verdict, step.correct, step.done, ep.num_turns) == ("correct", True, True, 1)


# ----- VSOD ---------------------------------------------------------------------------------


def test_vsod_prompt_and_cyclic_rewind() -> None:
    ep = make_episode(record("VSOD"), hint=True)
    strings = scenario_strings("VSOD")
    expected = f"{strings.pre_prompt} What is the object? {strings.hint_prompt}"
    assert ep.observation.prompt == expected
    assert ep.observation.view.image == "VSOD/6/0000.png"
    assert ep.step("Rewind the video.").verdict == "proactive"
    assert ep.observation.view.image == "VSOD/6/0002.png"  # 0 - 1 mod 3
    assert ep.step("Wait for the occlusion to disappear.").verdict == "proactive"
    assert ep.observation.view.image == "VSOD/6/0000.png"
    assert ep.step("dog").verdict == "correct"
    assert ep.correct and ep.num_turns == 3


def test_vsod_category_at_once() -> None:
    ep = make_episode(record("VSOD"))
    assert ep.step("H").verdict == "correct"  # 4 options + dog is the 4th category


# ----- MVP-N --------------------------------------------------------------------------------


def test_mvpn_views_and_last_turn() -> None:
    ep = make_episode(record("MVP-N"))  # 3 turns, valid_images [7, 3, 9, 1]
    verdicts, images = play(ep, ["A", "A", "A"])
    assert images == ["MVP-N/5/0_0007.png", "MVP-N/5/0_0003.png", "MVP-N/5/1_0009.png"]
    # On the last turn only the category is correct: rotating again fails.
    assert verdicts == ["proactive", "proactive", "wrong"]
    assert not ep.correct and ep.num_turns == 3


def test_mvpn_answer_on_last_informative_view() -> None:
    ep = make_episode(record("MVP-N"))
    ep.step("Rotate the object.")
    ep.step("Rotate the object.")
    assert ep.observation.correct_actions == ()
    assert ep.step("apple").verdict == "correct"
    assert ep.num_turns == 3


def test_mvpn_reference_is_informative() -> None:
    ep = make_episode(record("MVP-N"), reference=True)
    assert ep.observation.view.image == "MVP-N/5/1_0009.png"


# ----- IN-C ---------------------------------------------------------------------------------


def test_inc_only_the_quality_answer_is_correct() -> None:
    ep = make_episode(record("IN-C"))
    assert ep.observation.correct_actions == ("Deblur the image.",)
    assert ep.step("Increase the brightness.").verdict == "wrong"
    assert ep.done and not ep.correct


def test_inc_levels_go_down_and_last_turn_is_category_only() -> None:
    ep = make_episode(record("IN-C"))  # 5 turns from level 5
    verdicts, images = play(ep, ["D"] * 5)  # D = "Deblur the image."
    assert images == [f"IN-C/2/{level}.png" for level in (5, 4, 3, 2, 1)]
    assert verdicts == ["proactive"] * 4 + ["wrong"]


def test_inc_random_actions_without_quality_option() -> None:
    rec = record("IN-C", quality_answer="Sharpen it.")
    plain = make_episode(rec)
    assert plain.observation.correct_actions == ()
    ablation = make_episode(rec, random_actions=True)
    assert ablation.observation.correct_actions == tuple(INC_OPTIONS)


# ----- QD -----------------------------------------------------------------------------------


def test_qd_details_then_category() -> None:
    ep = make_episode(record("QD"))
    verdicts, images = play(ep, ["A", "A", "dog"])
    assert images == ["QD/0/0000.png", "QD/0/0001.png", "QD/0/0002.png"]
    assert verdicts == ["proactive", "proactive", "correct"]


def test_qd_last_turn_action_fails() -> None:
    ep = make_episode(record("QD"))
    assert play(ep, ["A", "A", "A"])[0] == ["proactive", "proactive", "wrong"]


# ----- CIT ----------------------------------------------------------------------------------


def test_cit_rewind_pruned_near_the_start() -> None:
    ep = make_episode(record("CIT"))  # frame 1, step 3: 1 - 3 < 0
    obs = ep.observation
    assert obs.action_options == ("Wait for the object to appear.", *ABSTAIN)
    assert obs.view.image == "CIT/0/1.png"
    # Letters: A = wait, B, C = abstain, D.. = categories.
    assert ep.step("A").verdict == "proactive"
    assert ep.observation.view.image == "CIT/0/4.png"
    # Both moves shown again: A rewind, B wait, C, D abstain, E apple, F banana, G cup.
    assert ep.observation.action_options[0] == "Rewind the video."
    assert ep.step("F").verdict == "wrong"
    ep = make_episode(record("CIT"))
    ep.step("A")
    assert ep.step("G").verdict == "correct"


def test_cit_wait_pruned_near_the_end() -> None:
    ep = make_episode(record("CIT", first_image=8))  # 8 + 3 >= 10
    obs = ep.observation
    assert obs.action_options == ("Rewind the video.", *ABSTAIN)
    assert ep.step("Wait for the object to appear.").verdict == "mismatch"  # not shown
    ep = make_episode(record("CIT", first_image=8))
    assert ep.step("Rewind the video.").verdict == "proactive"
    assert ep.observation.view.image == "CIT/0/5.png"


def test_cit_end_of_video_without_wait_option_drops_each_lists_last() -> None:
    # docs/protocol.md §5, CIT: at frame 8 of 10 with step 3 the forward move would leave the
    # video, but no option says "Wait for the". The shown options then lose their last entry
    # ("I do not know.") and the correct actions (the non-abstaining ones) lose theirs
    # ("Rewind the video."), which thus stays on screen but is wrong.
    options = ["Rewind the video.", "I do not know."]
    ep = make_episode(record("CIT", first_image=8, options=options))
    obs = ep.observation
    assert obs.options == ("Rewind the video.", *CATS)  # A rewind, B apple ... E dog
    assert obs.correct_actions == ()
    assert obs.correct_categories == ("cup",)
    step = ep.step("A")
    assert (step.verdict, step.done, step.correct) == ("wrong", True, False)
    ep = make_episode(record("CIT", first_image=8, options=options))
    assert ep.step("Rewind the video.").verdict == "wrong"
    ep = make_episode(record("CIT", first_image=8, options=options))
    assert ep.step("I do not know.").verdict == "mismatch"  # no longer shown
    ep = make_episode(record("CIT", first_image=8, options=options))
    assert ep.step("D").verdict == "correct"  # cup: the category stays correct
    # Away from the end nothing is pruned and the rewind is a correct move.
    ep = make_episode(record("CIT", first_image=4, options=options))
    assert ep.observation.options == (*options, *CATS)
    assert ep.observation.correct_actions == ("Rewind the video.",)
    assert ep.step("A").verdict == "proactive"
    assert ep.observation.view.image == "CIT/0/1.png"


def test_cit_end_of_video_drops_the_last_option_even_when_it_abstains() -> None:
    # The shown list's last entry is an abstention here, the correct list's last is the rewind.
    options = ["I do not know.", "Rewind the video.", "I cannot answer."]
    ep = make_episode(record("CIT", first_image=9, options=options))
    obs = ep.observation
    assert obs.action_options == ("I do not know.", "Rewind the video.")
    assert obs.correct_actions == ()
    assert ep.step("B").verdict == "wrong"
    # With a "Wait for the" option, that one goes from both lists and the rewind stays correct.
    ep = make_episode(record("CIT", first_image=9))
    assert ep.observation.action_options == ("Rewind the video.", *ABSTAIN)
    assert ep.observation.correct_actions == ("Rewind the video.",)


def test_cit_move_leaving_a_short_video_ends_the_episode() -> None:
    # 4 frames, step 3, frame 1: the rewind is pruned (1 - 3 < 0), so the end-of-video rule
    # does not apply and the wait stays shown and correct; carried out, it would leave the
    # video. The reference crashes here (docs/protocol.md §8); the episode ends as failed.
    ep = make_episode(record("CIT", num_images=4, reference_image=2))
    assert ep.observation.action_options == ("Wait for the object to appear.", *ABSTAIN)
    step = ep.step("A")
    assert (step.verdict, step.done, step.correct) == ("proactive", True, False)
    assert step.info["reason"] == "the move FORWARD would leave the video"


def test_cit_step_limit_from_record() -> None:
    ep = make_episode(record("CIT", first_image=0, max_steps=3))
    verdicts, images = play(ep, ["Wait for the object to appear."] * 5)
    assert images == ["CIT/0/0.png", "CIT/0/3.png", "CIT/0/6.png"]
    assert verdicts == ["proactive"] * 3 and not ep.correct and ep.num_turns == 3


def test_cit_random_move_leaving_the_video_stops() -> None:
    stops = 0
    for seed in range(40):
        ep = make_episode(record("CIT", first_image=1), random_actions=True, seed=seed)
        assert "Rewind the video." in ep.observation.action_options  # nothing pruned
        step = ep.step("Rewind the video.")
        if step.done:
            stops += 1
            assert step.info["action"] == "REWIND" and not step.correct
        else:
            assert step.info["action"] == "FORWARD"
            assert ep.observation.view.image == "CIT/0/4.png"
    assert 0 < stops < 40


def test_random_actions_are_seeded() -> None:
    def trajectory(seed: int) -> list[str]:
        ep = make_episode(record("ROD"), random_actions=True, seed=seed)
        return play(ep, ["A"] * 4)[1]

    assert trajectory(3) == trajectory(3)
    assert len({tuple(trajectory(s)) for s in range(12)}) > 1


# ----- COCO ---------------------------------------------------------------------------------


def test_coco_left_crops_and_pruning() -> None:
    ep = make_episode(record("COCO", direction="left"))  # granularity 2, h 10.5
    assert ep.max_steps == 2
    obs = ep.observation
    # The first turn already uses one step: left = 60 - 10.5; right/bottom stay width/height.
    assert obs.view.crop == (49.5, 40.0, 120.0, 90.0)
    assert obs.action_options == ("Move the camera to the left.", *ABSTAIN)
    assert ep.step("A").verdict == "proactive"
    obs = ep.observation
    assert obs.view.crop == (39.0, 40.0, 120.0, 90.0)  # h = 10.5 / 1 * 2 = 21
    assert obs.action_options == tuple(ABSTAIN)  # h >= max_h = 21: left/right pruned
    assert ep.step("Move the camera to the left.").verdict == "mismatch"


def test_coco_diagonal() -> None:
    ep = make_episode(record("COCO", direction="up_right"))
    assert ep.max_steps == 4 and ep.action_space() == ("UP", "RIGHT")
    assert ep.observation.view.crop == (60.0, 35.75, 130.5, 90.0)
    ep.step("Move the camera up.")  # v = 4.25 * 2 = 8.5
    assert ep.observation.view.crop == (60.0, 31.5, 130.5, 90.0)
    assert ep.observation.action_options == ("Move the camera to the right.", *ABSTAIN)
    ep.step("Move the camera to the right.")  # h = 21
    assert ep.observation.view.crop == (60.0, 31.5, 141.0, 90.0)
    assert ep.observation.action_options == tuple(ABSTAIN)
    assert ep.step("apple").verdict == "correct" and ep.num_turns == 3


def test_coco_zoom_crop_adds_the_offsets() -> None:
    ep = make_episode(record("COCO", direction="zoom"), hint=True)
    assert ep.observation.prompt.endswith(scenario_strings("COCO").hint_prompt["zoom"])
    # (left - h, top - v, width + h + left, height + v + top)
    assert ep.observation.view.crop == (49.5, 35.75, 190.5, 134.25)
    ep.step("Move farther from the object.")
    assert ep.observation.view.crop == (39.0, 31.5, 201.0, 138.5)


@pytest.mark.parametrize(
    ("step", "granularity", "pruned"), [(0.1, 2, True), (0.7, 3, False), (0.1, 3, False)]
)
def test_coco_zoom_pruning_uses_float_equality(step: float, granularity: int, pruned: bool) -> None:
    # 0.7, granularity 3 (4 turns): h = 0.7 -> 1.4 -> 2.0999999999999996 -> 2.7999999999999994,
    # not 0.7 * 4 = 2.8, so the zoom option is still shown on the last turn. 0.1, granularity 2:
    # h = 0.1 -> 0.2 -> 0.30000000000000004 == 0.1 * 3, so it is pruned. 0.1, granularity 3:
    # h ends at 0.4000000000000001 != 0.4: shown.
    rec = record(
        "COCO", direction="zoom", granularity=granularity, horizontal_step=step, vertical_step=step
    )
    ep = make_episode(rec)
    for _ in range(granularity):
        assert ep.step("Move farther from the object.").verdict == "proactive"
    shown = "Move farther from the object." in ep.observation.action_options
    assert shown is not pruned
    assert ep.is_last_turn


def test_coco_reference_shows_the_whole_image() -> None:
    ep = make_episode(record("COCO"), reference=True)
    assert ep.observation.view.crop is None
    assert ep.observation.view.image == "COCO/0.png"


def test_move_hint_for_directions() -> None:
    ep = make_episode(record("COCO", direction="down"), hint=True)
    assert ep.observation.prompt.endswith(scenario_strings("COCO").hint_prompt["move"])


# ----- keyword failures (docs/protocol.md §8) ---------------------------------------------------


def test_option_without_keyword_is_a_mismatch_not_a_crash() -> None:
    ep = make_episode(record("ROD", options=["Lift the blocks.", *ABSTAIN]))
    step = ep.step("Lift the blocks.")
    assert step.verdict == "mismatch" and step.done and "names no action" in step.info["reason"]


def test_option_with_two_actions_is_a_mismatch() -> None:
    ep = make_episode(record("ROD", options=["Move to the left or to the right.", *ABSTAIN]))
    step = ep.step("A")
    assert step.verdict == "mismatch" and "several" in step.info["reason"]


# ----- why an episode ends, and reading apart from applying ------------------------------------


@pytest.mark.parametrize(
    ("build", "answers", "end", "truncated"),
    [
        (lambda: record("ROD"), ["A", "cup"], "correct", False),
        (lambda: record("ROD"), ["C"], "abstained", False),  # C = "I cannot answer."
        (lambda: record("ROD"), ["cup"], "wrong", False),  # nothing visible on turn 1
        (lambda: record("ROD"), ["the blocks, maybe"], "unreadable", False),
        (lambda: record("CIT", first_image=0, max_steps=3), ["A"] * 3, "step_limit", True),
        (lambda: record("CIT", num_images=4, reference_image=2), ["A"], "left_video", False),
        (lambda: record("ROD", options=["Lift the blocks.", *ABSTAIN]), ["A"], "no_action", False),
    ],
)
def test_every_episode_says_why_it_ended(build, answers, end, truncated) -> None:
    ep = make_episode(build())
    steps = [ep.step(answer) for answer in answers]
    assert [s.done for s in steps] == [False] * (len(steps) - 1) + [True]
    assert (steps[-1].end, steps[-1].truncated) == (end, truncated)
    assert all(s.end is None and not s.truncated for s in steps[:-1])


def test_reading_is_separate_from_applying() -> None:
    ep = make_episode(record("ROD"))
    choice = ep.read("B. Move the blocks to the right.")
    assert (choice.kind, choice.option) == ("action", "Move the blocks to the right.")
    assert ep.num_turns == 0 and ep.observation.view.image == "ROD/0/2.png"  # nothing moved
    assert ep.read("D").abstains and ep.read("zzz").kind == "unreadable"
    step = ep.apply(choice)
    assert step.verdict == "proactive" and step.info["action"] == "RIGHT"
    assert ep.observation.view.image == "ROD/0/3.png"


# ----- option order (beyond the paper) ------------------------------------------------------


def test_shuffled_options_are_read_by_the_letters_shown() -> None:
    ep = make_episode(record("ROD"), option_order="shuffled", seed=3)
    obs = ep.observation
    grouped = (*obs.action_options, *obs.categories)
    assert sorted(obs.options) == sorted(grouped) and obs.options != grouped
    right = chr(65 + obs.options.index("Move the blocks to the right."))
    step = ep.step(right)
    assert step.verdict == "proactive" and step.info["action"] == "RIGHT"
    cup = chr(65 + ep.observation.options.index("cup"))
    assert ep.step(f"{cup}.").verdict == "correct"
    # The same sample, seed and turn give the same order; the record order stays the default.
    again = make_episode(record("ROD"), option_order="shuffled", seed=3).observation
    assert again.options == obs.options
    assert make_episode(record("ROD")).observation.options == grouped


def test_oracle_wins_every_scenario_with_shuffled_options() -> None:
    from handmade import BUILDERS
    from proactivebench.benchmark.scenarios.base import best_move

    for short in BUILDERS:
        for seed in range(5):
            ep = make_episode(record(short), option_order="shuffled", seed=seed)
            while not ep.done:
                obs = ep.observation
                ep.step(chr(65 + obs.options.index(best_move(obs))))  # by letter, as shown
            assert ep.correct, (short, seed)


def _refusal(short: str, answers: list[str], **kw) -> tuple[str, str | None]:
    """Play `answers` on a hand-made record; the last step's verdict and its stated rule."""
    ep = make_episode(record(short, **kw))
    for answer in answers:
        step = ep.step(answer)
    return step.verdict, step.info.get("reason")


def test_a_verdict_decided_by_a_scenario_rule_says_which_rule() -> None:
    # The §5 rules that make an acceptable-looking answer wrong, each named on the turn.
    verdict, rule = _refusal("ROD", ["cup"])  # the answer key, on the first turn
    assert verdict == "wrong" and "ROD accepts no category on the first turn" in rule
    assert _refusal("ROD", ["B", "cup"]) == ("correct", None)  # a turn later it is right
    for short, move in (("MVP-N", "Rotate the object."), ("QD", "Add more details.")):
        last = make_episode(record(short)).max_steps
        verdict, rule = _refusal(short, [move] * last)
        assert verdict == "wrong" and f"{short} accepts only the category on the last turn" in rule
    verdict, rule = _refusal("IN-C", ["Increase the brightness."])  # the quality answer is deblur
    assert verdict == "wrong" and "'Deblur the image.'" in rule
    verdict, rule = _refusal("IN-C", ["Deblur the image."] * 4 + ["Deblur the image."])
    assert verdict == "wrong" and "IN-C accepts only the category on the last turn" in rule
    options = ["Rewind the video.", "I do not know."]
    verdict, rule = _refusal("CIT", ["A"], first_image=8, options=options)
    assert verdict == "wrong" and "CIT's quirk" in rule
    # Obvious verdicts carry no rule: a wrong category, an abstention, nothing readable.
    assert _refusal("VSOD", ["apple"]) == ("wrong", None)
    assert _refusal("ROD", ["I do not know."]) == ("wrong", None)
    assert _refusal("ROD", ["what?"]) == ("mismatch", None)

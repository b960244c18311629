"""Answer reading is total: no answer, however adversarial, raises or yields an unknown verdict."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from handmade import BUILDERS, record
from proactivebench.benchmark.registry import make_episode, paper_scenarios
from proactivebench.benchmark.scenarios import VERDICTS

ANSWERS_PER_SCENARIO = 15_000  # x 7 scenarios > 100,000


def _records(short: str) -> list:
    variants = [record(short)]
    if short == "COCO":
        variants += [record(short, direction=d) for d in ("zoom", "up_left", "down", "right")]
    if short == "CIT":
        variants.append(record(short, first_image=8))
    return variants


def _adversarial(rng: random.Random, options: tuple[str, ...]) -> str:
    kind = rng.randrange(10)
    if kind == 0:
        return rng.choice(options)
    if kind == 1:
        return f"{chr(65 + rng.randrange(30))}. {rng.choice(options)}"
    if kind == 2:
        return chr(65 + rng.randrange(40)) + rng.choice(["", ".", " .", "..", ")"])
    if kind == 3:  # arbitrary code points, surrogates and control characters included
        return "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randrange(12)))
    if kind == 4:
        return "".join(chr(rng.randrange(32)) for _ in range(rng.randrange(8)))
    if kind == 5:
        return rng.choice(["", " ", ".", "\n", "A.B.C.", "..A", "\x00", "None", "{}", "[A]"])
    if kind == 6:
        return rng.choice(options).upper().replace(" ", rng.choice(["", "  ", "\t"]))
    if kind == 7:
        return "Z." * rng.randrange(1, 200) + rng.choice(options)
    if kind == 8:
        return "\n".join(rng.choice(options) for _ in range(3))
    return rng.choice(options)[: rng.randrange(1, 20)]


def test_one_hundred_thousand_adversarial_answers() -> None:
    rng = random.Random(1234)
    total = 0
    seen = set()
    for short in paper_scenarios():
        episodes = [
            make_episode(r, **ablation, seed=i)
            for i, r in enumerate(_records(short))
            for ablation in ({}, {"random_actions": True}, {"random_suggestions": True})
        ]
        for i in range(ANSWERS_PER_SCENARIO):
            ep = episodes[i % len(episodes)]
            step = ep.step(_adversarial(rng, ep.observation.options))
            assert step.verdict in VERDICTS
            assert step.done == ep.done and (step.observation is None) == step.done
            assert step.correct is (ep.done and ep.correct)
            assert ep.num_turns <= ep.max_steps
            seen.add(step.verdict)
            total += 1
            if ep.done:
                ep.reset()
    assert total >= 100_000
    assert seen == set(VERDICTS)


def test_huge_answers() -> None:
    for short in paper_scenarios():
        ep = make_episode(record(short))
        huge = "A. " + "x" * 1_000_000 + " B." * 1000
        assert ep.step(huge).verdict in VERDICTS


@settings(max_examples=300, deadline=None)
@given(
    answers=st.lists(st.text(max_size=60), min_size=1, max_size=8),
    which=st.sampled_from(list(BUILDERS)),
)
def test_any_text_sequence(answers: list[str], which: str) -> None:
    ep = make_episode(record(which))
    for answer in answers:
        step = ep.step(answer)
        assert step.verdict in VERDICTS
        if step.done:
            break

"""CIT (ChangeIt): a video frame before or after the action that shows the object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from proactivebench.benchmark.protocol import fixed_action_space
from proactivebench.benchmark.records import Fields, Record, check_frame
from proactivebench.benchmark.scenarios.actions import is_abstention
from proactivebench.benchmark.scenarios.base import Episode, Halt
from proactivebench.benchmark.scenarios.registration import ScenarioInfo

REWIND_OPTION = "Rewind the video."
WAIT_MARKER = "Wait for the"


@dataclass(frozen=True)
class CITRecord(Record):
    scenario: ClassVar[str] = "CIT"
    step_size: int = 1
    max_steps: int = 1

    @classmethod
    def read_extra(cls, fields: Fields) -> dict[str, Any]:
        return {
            "step_size": fields.int("step_size", minimum=1),
            "max_steps": fields.int("max_steps", minimum=1),
        }

    @classmethod
    def check_first_image(cls, fields: Fields, first: int, num_images: int) -> None:
        check_frame(fields, first, num_images)


class CITEpisode(Episode):
    """REWIND/FORWARD jump `step_size` frames; options that would leave the video are pruned."""

    scenario = "CIT"
    record_type = CITRecord
    interventions = (REWIND_OPTION, "Wait for the object to appear.")
    record: CITRecord

    def action_space(self) -> tuple[str, ...]:
        return fixed_action_space("CIT")

    def _max_steps(self) -> int:
        return self.record.max_steps

    def _valid_options(self) -> list[str]:
        options = list(self.record.options)
        if self.random_actions:
            return options  # the ablation prunes nothing
        return self._pruned(options)

    def _correct_options(self, valid: list[str]) -> list[str]:
        """The non-abstaining options of the record, pruned on their own.

        Usually the same as the correct ones among `valid`; they differ at the end of a video
        whose options lack "Wait for the", where each list loses its own last entry.
        """
        if self.random_actions:
            return super()._correct_options(valid)
        return self._pruned([o for o in self.record.options if not is_abstention(o)])

    def _pruned(self, options: list[str]) -> list[str]:
        """`options` without the move that would leave the video (docs/protocol.md §5, CIT).

        Near the start the rewind goes. Near the end the first "Wait for the" option goes, or,
        when there is none, the list's last entry: the reference's quirk, kept because it
        changes what is shown and scored.
        """
        frame, step = int(self.image_id), self.record.step_size
        options = list(options)
        if frame - step < 0:
            if REWIND_OPTION in options:
                options.remove(REWIND_OPTION)
        elif frame + step >= self.record.num_images:
            waits = [i for i, option in enumerate(options) if WAIT_MARKER in option]
            if waits:
                del options[waits[0]]
            elif options:
                del options[-1]
        return options

    def _action_refusal(self, option: str) -> str:
        return (
            "CIT's quirk at the end of a video whose options lack 'Wait for the': the shown "
            "options and the correct ones each lose their own last entry, so this option is "
            "still shown but no longer correct (protocol §5)"
        )

    def oeg_answers(self) -> str:
        """The (pruned) correct moves, then "Rewind the video." once more, then the categories
        (docs/protocol.md §6): a rewind can appear twice, as in the reported numbers."""
        obs = self.observation
        entries = (*obs.correct_actions, REWIND_OPTION, *obs.correct_categories)
        return ",".join(a.replace(".", "") for a in entries) + "."

    def _transition(self, action: str) -> Halt | None:
        step = self.record.step_size
        frame = int(self.image_id) + (-step if action == "REWIND" else step)
        if not 0 <= frame < self.record.num_images:
            return Halt("left_video", f"the move {action} would leave the video")
        self.image_id = frame
        return None

    def reachable_images(self) -> list[str]:
        # Frames first + k * step for |k| <= max_steps, within the video (computed as bounds:
        # max_steps may be far larger than the video).
        record, first, step = self.record, self.record.first_image, self.record.step_size
        lowest = -min(record.max_steps, first // step)
        highest = min(record.max_steps, (record.num_images - 1 - first) // step)
        return [self._image_path(first + k * step) for k in range(lowest, highest + 1)]


# An official row is CIT's when an option moves in time (asked last: VSOD's rows do too).
REGISTRATION = ScenarioInfo.paper(CITEpisode, marker="P", rank=7)

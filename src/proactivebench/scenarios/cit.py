"""CIT (ChangeIt): a video frame before or after the action that shows the object."""

from __future__ import annotations

from proactivebench.protocol import fixed_action_space
from proactivebench.records import CITRecord
from proactivebench.scenarios.base import Episode

REWIND_OPTION = "Rewind the video."
WAIT_MARKER = "Wait for the"


class CITEpisode(Episode):
    """REWIND/FORWARD jump `step_size` frames; options that would leave the video are pruned."""

    scenario = "CIT"
    record: CITRecord

    def action_space(self) -> tuple[str, ...]:
        return fixed_action_space("CIT")

    def _max_steps(self) -> int:
        return self.record.max_steps

    def _valid_options(self) -> list[str]:
        options = list(self.record.options)
        if self.random_actions:
            return options  # the ablation prunes nothing
        frame, step = int(self.image_id), self.record.step_size
        if frame - step < 0:
            if REWIND_OPTION in options:
                options.remove(REWIND_OPTION)
        elif frame + step >= self.record.num_images:
            for i, option in enumerate(options):
                if WAIT_MARKER in option:
                    del options[i]
                    break
        return options

    def _transition(self, action: str) -> bool:
        step = self.record.step_size
        frame = int(self.image_id) + (-step if action == "REWIND" else step)
        if not 0 <= frame < self.record.num_images:
            return False  # the move would leave the video: the episode stops here
        self.image_id = frame
        return True

    def reachable_images(self) -> list[str]:
        record = self.record
        reach = range(-record.max_steps, record.max_steps + 1)
        frames = {record.first_image + k * record.step_size for k in reach}
        frames = {f for f in frames if 0 <= f < record.num_images} | {record.first_image}
        return sorted({self._image_path(f) for f in frames})

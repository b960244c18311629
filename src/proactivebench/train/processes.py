"""`train grpo` under `accelerate launch` (or `torchrun`): one command, several processes.

Every process runs the whole command; accelerate (through TRL's trainer) splits each batch
between them and averages the gradients. What is ours is the output directory and the data:

- only the main process creates the output directory, writes into it and prints; the others
  wait for it at a barrier, so that no file is written twice or half;
- every process must train on the same examples in the same order (each takes its slice of
  each batch by position): `check_same_data` compares a digest of them across processes and
  stops the run with one message when they differ (say, a `--data` that each node reads from
  its own disk).

Outside a launcher there is one process, the main one, and no barrier does anything.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from proactivebench.core.errors import TrainError
from proactivebench.core.texts import dumps

if TYPE_CHECKING:
    from datasets import Dataset


def process_state() -> Any:
    """accelerate's view of this process (`is_main_process`, `num_processes`,
    `wait_for_everyone`); under a launcher it joins the process group the trainer then uses."""
    from accelerate import PartialState

    return PartialState()


def data_digest(dataset: Dataset) -> str:
    """A hash of the examples in order, images left out (their paths or records are in the
    other columns; decoding every image to hash it would cost more than it tells)."""
    columns = [name for name in dataset.column_names if "image" not in name]
    digest = hashlib.sha256()
    for row in dataset.select_columns(columns).to_list():
        digest.update(dumps(row, sort_keys=True, default=str).encode("utf-8"))
    return digest.hexdigest()


def check_same_data(state: Any, dataset: Dataset) -> None:
    """Refuse to train when the processes' examples differ (a no-op in one process)."""
    if state.num_processes == 1:
        return
    from accelerate.utils import gather_object

    digests = gather_object([data_digest(dataset)])
    if len(set(digests)) > 1:
        differing = [rank for rank, d in enumerate(digests) if d != digests[0]]
        raise TrainError(
            f"the training data differs between processes (process(es) "
            f"{', '.join(map(str, differing))} read other examples than process 0): every "
            "process must read the same --data"
        )

"""lmms-eval's task directory for ProactiveBench (YAML files; docs/lmms-eval.md).

lmms-eval reads it through `--include_path DIR`; `python -m proactivebench.tasks` prints DIR:
`lmms-eval --include_path "$(python -m proactivebench.tasks)" --tasks proactivebench ...`.
(lmms-eval's other way, `LMMS_EVAL_PLUGINS=PACKAGE`, also imports `PACKAGE.models` and reads
its `AVAILABLE_MODELS`, a table of model wrappers this package does not have.)

The YAML files name the functions of `proactivebench.adapters.lmms_eval_task`, which play the
episodes: `_default_template_yaml` holds the common config, each `proactivebench_<scenario>.yaml`
one registered scenario's subtask, and `proactivebench.yaml` the group that averages them
(unweighted, as our average row). `tests/test_lmms_eval.py` checks that they follow the
registry.
"""

from pathlib import Path

#: The directory to give lmms-eval's `--include_path`.
TASK_DIR = Path(__file__).resolve().parent

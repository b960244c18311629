"""`python -m proactivebench.tasks`: print the task directory, for lmms-eval's --include_path."""

from proactivebench.tasks import TASK_DIR

print(TASK_DIR)

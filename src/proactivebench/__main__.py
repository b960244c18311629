"""`python -m proactivebench ...`: the `proactivebench` command, for launchers that start a
module rather than a script (`torchrun -m`, `accelerate launch -m proactivebench ...`)."""

from proactivebench.cli import main

if __name__ == "__main__":
    main()

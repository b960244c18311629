"""The benchmark's rules: its strings, the paper's numbers, records, the scenarios and their
registry, prompts, result-line types, metrics."""

"""The benchmark's rules: strings, scenarios, records, prompts, lines, metrics."""

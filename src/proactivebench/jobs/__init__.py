"""Whole tasks: evaluate, re-judge, launch, suites, filters, push, the demo, `list`."""

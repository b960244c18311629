"""What every layer leans on: errors, outside text, escapes, paths, provenance, ranges, stats
(and `moved`: the earlier release's module paths)."""

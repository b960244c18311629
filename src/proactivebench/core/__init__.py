"""What every layer leans on: errors, outside text, escapes, paths, ranges, stats."""

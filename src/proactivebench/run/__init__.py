"""A run's parts: settings, episodes chosen, one played and judged, engine, run files."""

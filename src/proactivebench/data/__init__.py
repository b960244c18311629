"""Data: loading and validating the official layout, image views and thumbnails, the Hub
download, a user's sample filter, the synthetic generator."""

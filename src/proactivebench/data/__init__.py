"""Data: loading the official layout, image views, the Hub download, the synthetic generator."""

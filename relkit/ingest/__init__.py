"""Readers of raw files into the store: one module per source family."""

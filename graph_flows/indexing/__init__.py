"""Indexing: load, clean, chunk, extract, validate and store documents."""

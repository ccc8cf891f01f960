"""Tests of indexing."""

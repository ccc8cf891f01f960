"""Tests of shared."""

"""Tests of query."""

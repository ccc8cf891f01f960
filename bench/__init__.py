"""Benchmarks of krag components, run as scripts: ``python -m bench.<name> --help``."""

"""Fetch's benchmarks: ``python -m bench`` (see bench/README.md). Not part of pytest."""

"""Benchmarks run by `make bench`; each module writes its own section of docs/benchmarks.md."""

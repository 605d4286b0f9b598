"""Measurements that are not speed benchmarks, each runnable as ``python -m bench.probes.<name>``."""

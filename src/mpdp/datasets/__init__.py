"""Datasets, loaders with checksums, synthetic generators and partitioners."""

"""Protocols: parties exchanging messages to compute inner products, aggregates and noise."""

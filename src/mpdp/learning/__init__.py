"""The five papers' algorithms, composed from protocols, crypto and dp."""

"""Cryptography: fixed-point secret sharing, Paillier, CKKS, ristretto255 batches. Never touches the network."""

"""Cryptography: fixed-point secret sharing, Paillier, CKKS. Never touches the network."""

"""The generator of the protocol test vectors in ``protocol/vectors/`` (see generate.py)."""

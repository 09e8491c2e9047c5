"""sealmem.crypto."""

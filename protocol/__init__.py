"""sealmem.protocol."""

"""sealmem.hub."""

"""sealmem.client."""

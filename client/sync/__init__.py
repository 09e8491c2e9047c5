"""The sync engine, its view of the local store, and the transports."""

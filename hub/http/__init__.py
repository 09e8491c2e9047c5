"""The hub's HTTP runtime: the app, its front and edge, the handlers, the worker
threads and the server that runs it (the rules and the storage sit beside, in ``hub/``)."""

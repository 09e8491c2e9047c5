"""``sealmem ui``: a local web viewer of the memory store, for a person.

Server-rendered pages (Starlette + Jinja2) on 127.0.0.1 only, guarded as a
local server must be (:mod:`.guard`): a random per-run token in the printed
URL is exchanged for an HttpOnly cookie; the Host and Origin headers are
checked (DNS rebinding, cross-site requests); every write carries a CSRF
token; a strict Content-Security-Policy forbids inline script and style.
All text is escaped, and control and bidi characters are shown as escapes
(:func:`sealmem.client.textsafe.visible`): memory text is written by
teammates and is treated as hostile.  Writes go through the same
:class:`~sealmem.client.recall.api.MemoryStore` API as the CLI.
"""

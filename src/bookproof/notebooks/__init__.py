"""Exercise notebooks generated from their unit plans, so a plan and its notebook cannot drift.

`build` turns one plan into notebook JSON (deterministic, byte-identical on
regeneration); `sync` finds every `exercises/bookNN/unit_*.md` and writes or
checks the `unit_*.ipynb` beside it. Any exercise book gets its notebooks by
adding plans; nothing here is specific to a book.
"""

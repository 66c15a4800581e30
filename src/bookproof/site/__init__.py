"""The book as a website, built from the chapters' Markdown, showing what the verifier proved.

Design note: why Sphinx with MyST-Parser (and the Furo theme)
------------------------------------------------------------

We weighed the three documentation tools of the Python ecosystem that read
Markdown, as they stand at the end of 2026:

- **MkDocs with Material.** MkDocs itself has had no release since 1.6.1
  (August 2024), and Material's authors have put it in maintenance mode while
  they build its successor, Zensical (0.1 at the time of writing). Building a
  book on a core nobody develops, under a theme that is being replaced, is the
  wrong bet for a text meant to last. Its Markdown dialect (Python-Markdown) is
  also not CommonMark, the format our chapters and verifier share.
- **Jupyter Book.** Version 2 is a front end to `mystmd`, a Node.js tool: the
  build would leave the Python toolchain the book's readers install with `uv`.
  Version 1 (Sphinx underneath) is in maintenance only.
- **Sphinx with MyST-Parser.** Both are actively released (Sphinx 9, MyST-Parser
  5) and are the base the other two either left or build on. MyST parses
  CommonMark with markdown-it-py, the parser our verifier already uses, so the
  site and the verifier see the same fences at the same lines. Sphinx gives,
  without a plugin, a client-side full-text search, cross-references that fail
  the build when broken (`-W`), a glossary with linkable terms, permalinks on
  captions, and an extension API to own everything book-specific.

Fence info strings are where a generic tool would misread us: a renderer that
keeps only the first word shows `python skip` and `python raises=KeyError` as
plain Python. MyST's `fence_as_directive` hands every `python`, `output` and
`checkpoint-output` fence to a directive of ours with the full info string and
the fence's line, and those directives classify it with the verifier's own
`classify_info`. Listing numbers ("Listing 2.7") are the chapter's own number
and the listing's rank, not Sphinx's `numfig` (which would number chapters by
their place in the table of contents, wrong as soon as a planned chapter sits
between two drafted ones). The theme is Furo: maintained, readable on a phone,
light and dark, and it keeps Sphinx's search.

Modules
-------

- `vocabulary`: a chapter's Vocabulary section into terms (strict, with lines);
- `xref`: "chapter 3", "section 2.8", "Listing 2.7", "Figure 6.1", "Exercise Book 2" in prose;
- `evidence`: the verifier's JSON report, checked for completeness and staleness;
- `sitedata`: what the build hands the Sphinx extension;
- `sources`: the generated Sphinx source folder (copies, figures, contents, glossary);
- `extension`: the Sphinx extension (listings, figures, badges, banner, links);
- `build`, `serve`, `cli`: the two commands, `scripts/build_site.py` and
  `scripts/serve_site.py`.
"""

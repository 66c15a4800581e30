"""The manifest as the verifier reads it: owned by `bookproof.layout`, named here for the verifier.

The book's layout (book.toml, and where each part of a chapter lives) has one
owner, `bookproof.layout`; the verifier's modules import these names from here.
"""

from __future__ import annotations

from bookproof.layout import Manifest, ManifestChapter, ManifestError, load_manifest

__all__ = ["Manifest", "ManifestChapter", "ManifestError", "load_manifest"]

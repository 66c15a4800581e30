"""The runtime the book builds, chapter by chapter."""

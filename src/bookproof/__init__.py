"""The tooling that proves the book: the verifier, the grader and the notebook sync."""

"""The code that runs inside a submission's sandbox, next to code the grader does not trust.

Nothing here decides a grade or holds anything that could: no expected
answer, no secret, no plan of the questions to come. The harness answers one
question at a time about the submission; the stand-in lets a learner's tests
reach the implementation under test only through plain values; `limits` is
applied by each of them to its own process before any learner code runs.

This package is mounted read-only into the sandbox as a top-level package
(`gradechild`), alone: the rest of the grader's source stays outside. Its
modules therefore import each other relatively and nothing from `bookproof`.
"""

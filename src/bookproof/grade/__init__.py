"""The exercise grader: per-check scores and feedback, safe against hostile submissions.

A submission cannot grade itself. The grading process never imports it: a
child process (`bookproof.grade.harness`) imports the submission inside a
temporary copy of its folder, under memory, file-size, CPU and wall-clock
limits, and sends back raw observations (plain JSON of exact builtin types)
over a dedicated pipe. The grader validates every frame and decides each
check by comparing those observations with answers it computed itself for
data it randomised in this run (`bookproof.grade.books.bookNN`).

Modules: `checks` (the records and step vocabulary a book module uses),
`books` (one module per exercise book), `harness` (the child),
`runner` (the parent side of one submission), `encoding` (the strict
encoder and decoder), `report` (table, JSON, CSV), `cli` (the command).
"""

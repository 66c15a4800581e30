"""The book verifier: runs every chapter's listings and proves their printed output.

The contract is the project's chapter format, `book/FORMAT.md`. One module per job:

- `manifest`: book.toml into typed chapter records (errors name file:line);
- `chapter`: Markdown fences into typed blocks, listings paired with outputs;
- `compare`: normalised comparison and the `...` wildcards;
- `worker`: the child process that runs one chapter's listings;
- `execute`: starting children (worker, checkpoint, learner import) under time limits;
- `drift`: the learner file against the chapter's listings;
- `verification`: scheduling the children (-j N) and judging what they return;
- `verdict`: the records the reports are made from;
- `report`, `update`, `cli`: terminal/JSON/JUnit reports, --update, the command line.

Importing this package stays cheap on purpose: the chapter worker process
imports it too, and its start-up time is paid once per chapter.
"""

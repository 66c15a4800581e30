"""The book verifier: runs every chapter's listings and proves their printed output.

The contract is the project's chapter format, `book/FORMAT.md`: fenced blocks
`python`, `python skip`, `python raises=Name`, `python changes=Name`, `output`
(paired with the listing just above it) and `checkpoint-output`, and figures. One module per job:

- `manifest`: book.toml into typed chapter records (errors name file:line);
- `files`: reading a named file, with a one-line reason for each way it fails;
- `chapter`: Markdown fences into typed blocks, listings paired with outputs;
- `compare`: normalised comparison and the `...` wildcards;
- `worker`: the child process that runs one chapter's listings;
- `processes`: child processes that cannot outlive their run, output read in bounded memory;
- `execute`: the three kinds of run (listings, checkpoint, learner import) under time limits;
- `compose`: a `python changes=Name` listing made into the whole class it changes;
- `drift`: the learner file against the chapter's listings;
- `figures`: a chapter's figures found, redrawn by their scripts, compared;
- `judge`: what the runs did, as verdicts on each listing, checkpoint and learner file;
- `verification`: scheduling the runs (-j N) and collecting the verdicts;
- `cache`: the verdicts of chapters that held, reused while nothing they read changed;
- `verdict`: the records the reports are made from;
- `quoting`: long text quoted in a failure up to a bound;
- `report`, `update`, `cli`: terminal/JSON/JUnit reports, --update, the command line.

Importing this package stays cheap on purpose: the chapter worker process
imports it too, and its start-up time is paid once per chapter.
"""

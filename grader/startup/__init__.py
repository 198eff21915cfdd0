"""Start-up and per-notebook tuning, and nothing else: each module here trades a library's
default for CPU time that a grading run would otherwise pay in every process or notebook.
docs/performance.md has one table: each trick, its file, the gain measured, the test that
guards it. Nothing here runs on `import grader`."""

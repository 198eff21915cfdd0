"""The grader's side of a notebook's run: each test cell runs here, against handles on the
student's objects (remote.py); the student's cells run in the sandbox (grader.sandbox).
run.py is what a grading pool's process calls for one notebook; notebook.py runs its cells."""

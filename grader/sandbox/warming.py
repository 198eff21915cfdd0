"""First of the modules the grading pool's fork server imports (grader.parallel.PRELOAD), as
grader.sandbox.warmed is the last: between the two, torch, the judge and what the assignment
declares are imported with Python's cyclic garbage collector paused (grader.collector)."""

from grader.collector import pause

pause()

"""`autograde`, stage by stage (autograde.py runs them in order): find the submissions and copy
them in safely (grader.intake), make each notebook safe to execute (sanitize.py), execute them
on many cores (pools.py, scheduled by scheduler.py), and write the grades and flags (grades.py,
the one module that writes them). What each stage hands the next is grader.submission's.
docs/architecture.md draws the flow file by file."""

"""`autograde`, stage by stage: find the submissions (intake.py), copy them in safely
(intake.py), make each notebook safe to execute (sanitize.py), execute them on many cores
(pools.py, scheduled by scheduler.py), and record points and flags (autograde.py, record.py).
docs/architecture.md draws the flow file by file."""

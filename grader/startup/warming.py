"""First of the modules the grading pool's fork server imports (grader.pipeline.pools.PRELOAD), as
grader.startup.warmed is the last: between the two, torch, the judge and what the assignment
declares are imported with Python's cyclic garbage collector paused (grader.startup.collector), and
with one thread for each math library (grader.startup.threads), set before numpy and PyTorch load:
each pool process forked from the server is one judge on one core
(grader.pipeline.pools.worker_cpu),
and the server's own idle threads would otherwise spin through its start-up."""

import os

from grader.startup import formats
from grader.startup.collector import pause
from grader.startup.threads import ONE_THREAD

pause()
os.environ.update(ONE_THREAD)
formats.leave_out()  # (jsonschema's optional format packages: formats.py)

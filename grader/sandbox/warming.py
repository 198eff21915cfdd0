"""First of the modules the grading pool's fork server imports (grader.parallel.PRELOAD), as
grader.sandbox.warmed is the last: between the two, torch, the judge and what the assignment
declares are imported with Python's cyclic garbage collector paused (grader.collector), and
with one thread for each math library (grader.threads), set before numpy and PyTorch load:
each pool process forked from the server is one judge on one core (grader.parallel.worker_cpu),
and the server's own idle threads would otherwise spin through its start-up."""

import os

from grader.collector import pause
from grader.threads import ONE_THREAD

pause()
os.environ.update(ONE_THREAD)

"""PyTorch warmed up on import, for the grading pool's fork server (grader.pipeline.pools.PRELOAD),
which can only import modules: each operator's first use is then paid once per grading command,
not once per pool process. See warm_up.py. (Not the meta device's: the tests run only the
students' code on it, in their sandbox; what a test imports on first use, its assignment
declares.)
Then the start-up is over: what it made is frozen and the garbage collector, paused by
grader.startup.warming, runs again (grader.startup.collector).

The fork server ends when the grading command does; its end skips the interpreter's teardown
(grader.startup.exits.exit_now, an exit handler: it runs before every handler registered
earlier, torch's among them). Processes forked from it never run exit handlers
(multiprocessing ends them with os._exit)."""

import atexit

import nbformat
from nbformat.v4 import new_notebook

from grader.startup.collector import resume
from grader.startup.exits import exit_now
from grader.startup.warm_up import warm_up

warm_up()
nbformat.validate(new_notebook())  # or compiled here, once for every pool process
resume()
atexit.register(exit_now)

"""PyTorch warmed up on import, for the grading pool's fork server (grader.parallel.PRELOAD),
which can only import modules: each operator's first use is then paid once per grading command,
not once per pool process. See zygote.warm_up. (Not the meta device's: the tests run only the
students' code on it, in their sandbox; what a test imports on first use, its assignment
declares.)
Then the start-up is over: what it made is frozen and the garbage collector, paused by
grader.sandbox.warming, runs again (grader.collector).

The fork server ends when the grading command does; its end skips the interpreter's teardown
(grader.exits.exit_now, an exit handler: it runs before every handler registered earlier, torch's
among them). Processes forked from it never run exit handlers (multiprocessing ends them with
os._exit)."""

import atexit

import nbformat
from nbformat.v4 import new_notebook

from grader import notebook_schema
from grader.collector import resume
from grader.exits import exit_now
from grader.sandbox.zygote import warm_up

warm_up()
notebook_schema.install()  # the notebook schema's validator, as `make bytecode` stored it
nbformat.validate(new_notebook())  # or compiled here, once for every pool process: 35 ms
resume()
atexit.register(exit_now)

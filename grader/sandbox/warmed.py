"""PyTorch warmed up on import, for the grading pool's fork server (grader.parallel.PRELOAD),
which can only import modules: each operator's first use (the meta device's a second of it) is
then paid once per grading command, not once per pool process. See zygote.warm_up."""

from grader.sandbox.zygote import warm_up

warm_up()

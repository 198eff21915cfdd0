"""`python -m grader lab` (`make lab`): JupyterLab with nbgrader's extension on the course
(grader.servers.lab); the options it does not know go to `jupyter lab`."""

from __future__ import annotations

import argparse

from grader.cli.common import add_command, course_of


def add_parser(sub) -> argparse.ArgumentParser:
    return add_command(sub, "lab", "JupyterLab with nbgrader's extension on the course "
                       "(other options go to `jupyter lab`)")


def run(args) -> int:
    from grader.servers.lab import lab

    return lab(course_of(args), args.jupyter_args)

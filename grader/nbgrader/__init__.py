"""Everything that configures, subclasses or patches nbgrader: its configuration as data
(config.py), our steps in its pipelines (preprocessors.py, execute.py), every change to its own
code (patches.py), its API (api.py), gradebook look-ups (gradebook.py), and its exchange's verbs
(release, submit, collect).

Importing this package imports nothing of nbgrader: the processes that execute notebooks never
load it."""

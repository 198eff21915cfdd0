"""The Jupyter servers the grader starts (`make lab`: lab.py) and the server extensions they and
the hub's servers load: the Validate dialog's style (lab_style.py) and the formgrader's
Content-Security-Policy (formgrader_policy.py)."""

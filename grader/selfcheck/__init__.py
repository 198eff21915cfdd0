"""`python -m grader check NOTEBOOK`: a student runs the visible tests of their notebook
(run.py) and reads which pass, with the cell named the way the notebook shows it (cells.py)."""

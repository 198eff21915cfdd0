"""`make demo` (run.py) and the sample classes it grades (sample_class.py).

Importing the package imports neither: the sample classes and the catalogue built on them load
where only PyTorch is installed (the GPU checks, tests/cuda_checks.py).
"""

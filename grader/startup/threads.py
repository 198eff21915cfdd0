"""One thread for each math library PyTorch and numpy load, as the environment variables those
libraries read when they load: OpenMP's and MKL's (PyTorch's operators) and OpenBLAS's (numpy's).

The course's tensors are tiny, so a second thread only hands work back and forth; and a grading
run is already one process per core. An idle library thread is not free either: OpenBLAS starts
one per core as numpy loads, and OpenMP one per core at PyTorch's first parallel operation, and
each spins on its core for a while before it sleeps (docs/performance.md)."""

ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}

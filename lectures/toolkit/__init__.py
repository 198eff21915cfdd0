"""Small helpers shared by the lecture notebooks: one module per job.

- `plots`: attention heatmaps and other figures used in several lectures.
- further modules: toy data sets, training loops, the by-hand worksheet generator.

The notebooks run with lectures/ as their working directory, so `import toolkit` works there;
from the repository root it is `lectures.toolkit`. Models come from `solutions`.
"""

"""Tests of grader/nbgrader."""

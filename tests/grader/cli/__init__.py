"""Tests of grader/cli."""

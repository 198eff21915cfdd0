"""Tests of grader/checks."""

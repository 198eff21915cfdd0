"""Tests of grader/selfcheck."""

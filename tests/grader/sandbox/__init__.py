"""Tests of grader/sandbox."""

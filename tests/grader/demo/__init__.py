"""Tests of grader/demo."""

"""Tests of grader/startup."""

"""Tests of grader/outputs."""

"""Tests of grader/pipeline."""

"""Tests of grader/hub."""

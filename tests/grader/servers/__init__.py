"""Tests of grader/servers."""

"""Tests of grader/judge."""

"""Tests of grader/lms."""

"""The course's tests (a package, so that every test module has one name, rooted at the
repository: tests.grader.nbgrader.test_release, never a bare test_release or grader.x that
could stand for the real `grader`). Shared plumbing is in tests/support/."""

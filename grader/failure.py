"""The one exception a failing check raises: its message is written for the student.

A leaf, so that every layer that raises it (the checks, the judge's handles on the student's
objects, the switches of PyTorch's ready-made pieces) imports it from below."""


class CheckFailure(AssertionError):
    """A test found a wrong answer; the message is written for the student."""

"""The suites' shared fixtures, from tests/support/: `own_class` (a class of a test's own) and
`browser` (one headless chromium for a module's tests)."""

from tests.support.classes import own_class  # noqa: F401  (a fixture)
from tests.support.pages import browser  # noqa: F401  (a fixture)

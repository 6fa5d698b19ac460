"""Project tooling: set-up, test runner, notebook cleaning, fixture generation (not course content)."""

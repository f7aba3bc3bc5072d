"""Messages checked by their key phrases (the field, the allowed values, the problem, the
way out), not their whole wording: rewording a message keeps its tests green, losing a
phrase the user needs does not."""

from __future__ import annotations


def assert_says(text: str, *phrases: str) -> None:
    """Assert that `text` contains every one of `phrases`, naming the ones it lacks."""
    missing = [phrase for phrase in phrases if phrase not in text]
    assert not missing, f"missing {missing} in:\n{text}"

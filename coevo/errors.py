"""Errors that coevo reports to users."""


class ConfigError(ValueError):
    """Bad user input: the message names the field and what is allowed."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")

"""Errors that coevo reports to users."""


class ConfigError(ValueError):
    """Bad user input: the message names the field and what is allowed."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")

    def __reduce__(self) -> tuple:
        # Rebuilt from both arguments: one raised in a Ray worker reaches the driver whole
        # (the default pickling passes the one formatted string and fails to rebuild it).
        return type(self), (self.field, self.message)


def missing_package_hint(module_name: str, error: ImportError) -> str:
    """ " (is ... on PYTHONPATH ...?)" when the module's own top-level package is what could
    not be imported (not a dependency of it): most often a user's directory that is not on
    the path of this process (Ray's workers inherit PYTHONPATH)."""
    top = module_name.split(".")[0]
    if isinstance(error, ModuleNotFoundError) and error.name == top:
        return f" (is the directory holding '{top}' on PYTHONPATH, or the package installed?)"
    return ""


def yaml_error_text(error: Exception) -> str:
    """A YAML parser's error as one line: "line L, column C: what" where it knows the place."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or " ".join(str(error).split())
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark else problem


class Terminated(KeyboardInterrupt):
    """SIGTERM (a batch scheduler's cancel or preemption), raised where the run is, so it
    stops as Ctrl-C stops it; its messages and exit code say which it was."""

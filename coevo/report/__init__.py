"""Per-generation tables, plots and the run's HTML page. Reports; never decides."""

from coevo.report.html import drawing_once, write_report
from coevo.report.scalars import ScalarLogger
from coevo.report.tables import RunRecorder

__all__ = [
    "RunRecorder",
    "ScalarLogger",
    "drawing_once",
    "write_report",
]

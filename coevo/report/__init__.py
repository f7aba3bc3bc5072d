"""Per-generation tables, plots and the run's HTML page. Reports; never decides."""

from coevo.report.html import write_report
from coevo.report.scalars import ScalarLogger
from coevo.report.tables import ELIGIBILITY, POPULATION, SUMMARY, RunRecorder

__all__ = [
    "ELIGIBILITY",
    "POPULATION",
    "SUMMARY",
    "RunRecorder",
    "ScalarLogger",
    "write_report",
]

"""The names of the files a run keeps in its directory (RUN_DIR/NAME).

A leaf module (it imports nothing of coevo): the runner writes these files, the report
reads them, the CLI and the curricula name them, and none of those imports another for a
file name.
"""

from __future__ import annotations

CONFIG_FILE = "config.yaml"  # the run's settings, as parsed: what resume compares with
SUMMARY = "summary.csv"  # one row per generation
ELIGIBILITY = "eligibility.csv"  # one row per admission decision
POPULATION = "population.csv"  # the population as of the last generation
CROSS_SCORES_STEM = "cross_scores"  # POET's results table (GenerationResult.tables)
CROSS_SCORES = f"{CROSS_SCORES_STEM}.csv"
RETURNS = "returns.csv"  # eligible_parents mode: every pair's per-episode returns
# The held-out test set's tasks (written when the run starts) and, per test generation, each
# policy's return on each of them (the rows behind summary.csv's test_* columns).
TEST_SET = "test_set.csv"
TEST_SCORES = "test_scores"  # a table stem: RUN_DIR/test_scores.csv
# Why a run stopped before its last generation (a broken env, Ctrl-C): written by the
# runner, shown at the top of report.html, removed when the run goes on or completes.
STOPPED = "stopped.txt"
REPORT = "report.html"
CHECKPOINTS = "checkpoints"  # the folder of gen_NNNNNN.pkl files
LOCK_FILE = ".coevo.lock"  # held while a process runs in the directory

# What a run leaves in its directory: a new run there would mix its rows into these tables.
# (Not config.yaml alone: a common name for a user's own file, and a run that stopped before
# its first checkpoint has nothing else to lose.)
RUN_MARKERS = (SUMMARY, ELIGIBILITY, CHECKPOINTS)

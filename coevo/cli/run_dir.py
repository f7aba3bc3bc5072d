"""A run's directory around Hydra: one that already holds a run is refused before Hydra
writes there, and one a refused run leaves empty is taken away again."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from coevo import run_setup
from coevo.cli.console import fail
from coevo.cli.parse import is_multirun, sweep_jobs
from coevo.errors import ConfigError

# Run directories that existed before Hydra ran (`hydra.run.dir=` of the user's own
# making): a refused run takes out what Hydra put there, never the directory itself.
MADE_BY_USER: set[Path] = set()
# The nearest ancestor of a planned run directory that existed before Hydra ran: the empty
# folders Hydra makes above a refused run (runs/ in a fresh folder) go with it, up to there.
# (Not keyed by the run directory: Hydra resolves a `${now:...}` name again, a second later.)
EXISTED_ABOVE: set[Path] = set()


def drop_if_unused(run_dir: Path) -> None:
    """Remove what Hydra wrote for a run refused before it wrote anything (an empty log and
    Hydra's record of the composed config), and the directory if Hydra made it: a mistyped
    value should not leave an empty run behind in runs/, nor an empty runs/."""
    try:
        entries = {e.name: e for e in run_dir.iterdir()}
        log = entries.pop("cli.log", None)
        hydra_record = entries.pop(".hydra", None)
        if entries or log is None or log.stat().st_size:
            return  # something of the run's own, or a log with words in it: keep all
        log.unlink()
        if hydra_record is not None:
            shutil.rmtree(hydra_record)
        if run_dir.resolve() not in MADE_BY_USER:
            run_dir.rmdir()
            _drop_empty_parents(run_dir.resolve())
    except OSError:
        pass  # best effort: a directory we cannot read or remove is left as it is


def _drop_empty_parents(run_dir: Path) -> None:
    """Remove the empty folders Hydra made above `run_dir` (see EXISTED_ABOVE)."""
    kept = next((p for p in run_dir.parents if p in EXISTED_ABOVE), None)
    for parent in run_dir.parents:
        if kept is None or parent == kept or any(parent.iterdir()):
            return
        parent.rmdir()


def planned_dir(hydra_settings: Any, setting: str) -> Path | None:
    """The directory `setting` (run.dir or sweep.dir) will be, as Hydra resolves it (quotes,
    `${seed}`, `${now:...}` at this moment, set in a config file); None for one that only
    Hydra's run can resolve (the job's name). A timestamp to the second is new by
    construction; a coarser one (`${now:%Y-%m-%d}`) names the same directory all day."""
    if hydra_settings is None:
        return None
    if not OmegaConf.has_resolver("now"):  # Hydra registers it only inside its run
        OmegaConf.register_new_resolver("now", lambda pattern: datetime.now().strftime(pattern))
    try:
        raw: Any = OmegaConf.to_container(hydra_settings, resolve=False)
        written = str(raw[setting.split(".")[0]][setting.split(".")[1]])
        if "${hydra" in written:
            return None
        value = OmegaConf.select(hydra_settings, setting)
    except Exception:  # noqa: BLE001 - an interpolation only Hydra's run can resolve
        return None
    return Path(value) if value else None


def refuse_reused_dirs(args: list[str], hydra_settings: Any) -> None:
    """Before Hydra writes its record (.hydra/) anywhere: a run directory that holds a run
    is refused; for a multirun, the numbered job directories it will write."""
    if is_multirun(args):
        sweep = planned_dir(hydra_settings, "sweep.dir")
        written: Any = (
            OmegaConf.to_container(hydra_settings, resolve=False)
            if hydra_settings is not None
            else None
        )
        subdir = written["sweep"]["subdir"] if written is not None else None
        jobs = sweep_jobs(args)
        if sweep is None or subdir != "${hydra.job.num}" or jobs is None:
            return  # job directories named otherwise: the run itself refuses a reused one
        for job in range(jobs):
            try:
                run_setup.refuse_existing_run(sweep / str(job), setting="hydra.sweep.dir")
            except ConfigError as error:
                fail(str(error))
        return
    run_dir = planned_dir(hydra_settings, "run.dir")
    if run_dir is None:
        return
    try:
        run_setup.refuse_existing_run(run_dir)
    except ConfigError as error:
        fail(str(error))
    if run_dir.exists():
        MADE_BY_USER.add(run_dir.resolve())
    EXISTED_ABOVE.add(next(p for p in run_dir.resolve().parents if p.exists()))

"""A damaged checkpoint is refused with a message and the run resumes from the one before.

Every single-byte change and every cut of a real checkpoint is caught (a checksum covers the
pickled state), so a damaged file can neither resume a run with wrong numbers nor stop the
resume with a traceback. test_resume.py does the same through coevo-run for a cut file.
"""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from coevo import checkpoint
from coevo.checkpoint import CheckpointError
from coevo.config import parse_config
from coevo.runner import run

STATE = {"weights": np.arange(40, dtype=np.float32), "rows": [{"score": 1.5}], "gen": 3}


@pytest.fixture
def saved(tmp_path) -> Path:
    return checkpoint.save(tmp_path, 3, STATE)


def test_a_checkpoint_round_trips(saved):
    loaded = checkpoint.load(saved)
    np.testing.assert_array_equal(loaded["weights"], STATE["weights"])
    assert loaded["rows"] == STATE["rows"] and loaded["gen"] == 3


def test_every_single_byte_change_is_refused(saved, tmp_path):
    data = saved.read_bytes()
    damaged = tmp_path / "damaged.pkl"
    for index in range(len(data)):
        for delta in (1, 128):  # a low and a high bit
            changed = bytearray(data)
            changed[index] = (changed[index] + delta) % 256
            damaged.write_bytes(bytes(changed))
            with pytest.raises(CheckpointError, match="is unreadable|is not a coevo"):
                checkpoint.load(damaged)


def test_every_cut_is_refused(saved, tmp_path):
    data = saved.read_bytes()
    damaged = tmp_path / "cut.pkl"
    for length in range(len(data)):
        damaged.write_bytes(data[:length])
        with pytest.raises(CheckpointError, match="is unreadable"):
            checkpoint.load(damaged)


def test_a_checkpoint_without_checksum_still_loads(tmp_path):
    # Format 1 (before checksums): a bare pickle of the same envelope.
    old = tmp_path / "gen_000001.pkl"
    old.write_bytes(pickle.dumps({"format": 1, "generation": 1, "state": {"a": 1}}))
    assert checkpoint.load(old) == {"a": 1}
    old.write_bytes(old.read_bytes()[:-5])
    with pytest.raises(CheckpointError, match="is unreadable"):
        checkpoint.load(old)


def test_a_foreign_file_is_refused(tmp_path):
    foreign = tmp_path / "gen_000001.pkl"
    foreign.write_text("not a checkpoint at all")
    with pytest.raises(CheckpointError, match="is not a coevo checkpoint"):
        checkpoint.load(foreign)


def test_resume_skips_a_corrupt_newest_checkpoint_and_matches_a_clean_run(tmp_path):
    config = parse_config(
        {
            "seed": 4,
            "pool": {"backend": "local", "num_workers": 1},
            "optimizer": {"population": 6},
            "curriculum": {
                "generations": 4,
                "optimizer_steps": 1,
                "repro_threshold": 50,
                "reproduce_every": 1,
                "max_children": 3,
            },
            "task": {"max_episode_steps": 100},
        }
    )
    clean = run(config, tmp_path / "clean", echo=lambda line: None)
    damaged_run = tmp_path / "damaged"
    shutil.copytree(tmp_path / "clean", damaged_run)  # the same run, finished
    # Generation 4's checkpoint damaged in the middle (not cut): a bit flipped in the state.
    newest = damaged_run / "checkpoints" / "gen_000004.pkl"
    data = bytearray(newest.read_bytes())
    data[len(data) // 2] ^= 0x10
    newest.write_bytes(bytes(data))
    messages: list[str] = []
    resumed = run(config, damaged_run, echo=messages.append, resume=True)
    assert any("gen_000004.pkl is unreadable: corrupt" in m for m in messages), messages
    assert any("resuming" in m and "after generation 3" in m for m in messages), messages
    assert resumed.generation == 4
    for before, after in zip(clean.population.active, resumed.population.active, strict=True):
        np.testing.assert_array_equal(before.theta, after.theta)
        assert before.task == after.task and before.scores == after.scores

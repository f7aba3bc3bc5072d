"""ANNECS in both definitions in use, named apart in POET's summary."""

from __future__ import annotations

import numpy as np

from coevo import run_setup
from coevo.config import parse_config
from coevo.curricula.poet import rules
from coevo.pool import EvaluationPool


def test_both_annecs_definitions_count_what_they_say():
    config = parse_config(
        {
            "pool": {"backend": "local", "num_workers": 1, "envs_per_worker": 16},
            "optimizer": {"name": "es", "population": 8},
            "curriculum": {
                "name": "poet",
                "generations": 8,
                "reproduce_every": 1,
                "repro_threshold": 50,
                "max_children": 6,
                "max_active": 2,  # a small population: pairs reach the archive early
                "mc_lower": 20,
            },
            "test_set": {"every": 0},
        }
    )
    space, policy = run_setup.prepare(config)
    with EvaluationPool(space, policy, "local", 1, envs_per_worker=16) as pool:
        poet = run_setup.build(config, space, pool)
        results = poet.run()
        _check(poet, results)


def _check(poet, results) -> None:
    pairs = poet.population.all_pairs()
    admitted = [p for p in pairs if p.admitted_by_mc]
    cfg = poet.config
    checked_against_archive = 0
    for pair in admitted:
        # The archive when the pair was admitted: capacity archives after reproduction.
        archive = [p for p in pairs if p.archived_at is not None and p.archived_at < pair.born]
        if not archive:
            assert pair.mc_vs_archive
            continue
        scores = poet.pool.evaluate(
            [(p.theta, pair.task) for p in archive], cfg.eval_episodes, poet.pata_seed
        ).mean(axis=1)
        ok, _ = rules.minimal_criterion(float(np.max(scores)), cfg.mc_lower, cfg.mc_upper)
        assert pair.mc_vs_archive == ok
        checked_against_archive += 1
    assert checked_against_archive >= 1  # the run did exercise an archive
    last = results[-1].summary
    assert last["annecs"] == sum(p.solved_at is not None for p in admitted)
    assert last["annecs_reference"] == sum(p.mc_vs_archive for p in admitted)

"""Issue 29's failure, on real runs: ES-scored PLR⊥ and ACCEL that ranked levels by
`return_regret` piled onto levels nobody can solve; their default under ES, learnability,
does not. Solvable: a model-based controller balances the level (tests/cartpole_control.py).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from cartpole_control import controller_returns, solvable

from coevo.curricula.accel import ACCEL, ACCELConfig
from coevo.curricula.plr import PLRConfig, PrioritizedLevelReplay
from coevo.optimizers.es import ESConfig, EvolutionStrategy
from coevo.pool import EvaluationPool
from coevo.tasks.task import Task

# Share of the levels trained on that the controller balances: learnability's runs reach it,
# return_regret's do not. About 91 % of uniform CartPole levels are solvable by that count.
FLOOR = 0.9
CURRICULA = {"plr": (PrioritizedLevelReplay, PLRConfig), "accel": (ACCEL, ACCELConfig)}


def test_the_controller_tells_a_balanceable_level_from_a_hopeless_one(cartpole):
    # The heaviest cart, the weakest push, the strongest gravity: the cart's most
    # acceleration, 2 / 5.1 m/s², is far below the ~30 x 0.05 = 1.5 m/s² that a pole
    # tilted as a reset may leave it (up to 0.05 rad) needs, so it falls whatever is done.
    hopeless = cartpole.task(pole_length=0.5, cart_mass=5.0, force_mag=2.0, gravity=30.0)
    returns = controller_returns(cartpole, [cartpole.initial_task(), hopeless])
    assert (returns[0] == 500.0).all() and (returns[1] < 50.0).all()
    assert list(solvable(cartpole, [cartpole.initial_task(), hopeless])) == [True, False]


def trained_levels(pool, space, solver, curriculum: str, **settings) -> tuple[str, list[Task]]:
    """A seeded 20-generation run of 2 policies side by side, each from `solver`: the score
    it used and every level it trained on (PLR⊥ and ACCEL train on replays only)."""
    cls, config_class = CURRICULA[curriculum]
    config = config_class(generations=20, buffer_size=16, policies=2, **settings)
    es = EvolutionStrategy(ESConfig(population=16), pool.policy.num_params)
    run = cls(config, space=space, pool=pool, optimizer=es, seed=0, initial_theta=solver)
    results = run.run()
    decisions = [d for result in results for d in result.decisions if d.rule == "replay"]
    return run.score_used, [Task.from_json(d.task) for d in decisions]


@pytest.mark.parametrize("curriculum", ["plr", "accel"])
def test_learnability_trains_on_solvable_levels_where_return_regret_does_not(
    cartpole, cartpole_policy, cartpole_solver, curriculum
):
    """From a policy that balances the default pole, return_regret ranks the levels whose
    return stays lowest first: those nobody can balance."""
    with EvaluationPool(cartpole, cartpole_policy, "local", 1, envs_per_worker=64) as pool:
        with pytest.MonkeyPatch.context() as patch:  # their warnings are tested elsewhere
            patch.setattr(logging.getLogger("coevo.curricula"), "disabled", True)
            default = trained_levels(pool, cartpole, cartpole_solver, curriculum)
            named = trained_levels(
                pool, cartpole, cartpole_solver, curriculum, score="return_regret"
            )
    shares = {}
    for score, levels in (default, named):
        assert len(levels) >= 40  # replays began early: most rounds trained
        shares[score] = float(np.mean(solvable(cartpole, levels)))
    assert set(shares) == {"learnability", "return_regret"}  # ES's default: learnability
    assert shares["learnability"] >= FLOOR > shares["return_regret"], shares

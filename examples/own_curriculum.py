"""Write a curriculum: train on tasks near the initial one, and widen the range once solved.

A single-policy curriculum only picks tasks: subclass LevelSamplingCurriculum and write
plan(). From the command line, name it by import path in a config file of your own:
`curriculum.name=mypkg.widening:Widening` (see docs/extending.md).

    python examples/own_curriculum.py           # 20 generations
    python examples/own_curriculum.py --small   # 3 generations, for the tests
"""

import argparse
from dataclasses import dataclass

from coevo import EvaluationPool, MLPPolicy, tasks
from coevo.curricula import LevelSamplingConfig, LevelSamplingCurriculum, Plan
from coevo.optimizers import ES
from coevo.settings import setting


@dataclass(frozen=True)
class WideningConfig(LevelSamplingConfig):
    name: str = setting("own_curriculum:Widening")
    start: float = setting(0.1, low=0.0, high=1.0, doc="first width, a share of each range")
    grow: float = setting(0.2, low=0.0, high=1.0, doc="added to the width once solved")
    solved: float = setting(400.0, doc="mean training return that widens the range")


class Widening(LevelSamplingCurriculum):
    config_class = WideningConfig
    config: WideningConfig

    def __init__(self, config, **parts):
        super().__init__(config, **parts)
        self.width = config.start

    def plan(self, student, decisions):
        initial, tasks_now = self.space.initial_task(), []
        for _ in range(self.config.tasks_per_step):
            values = {}
            for p in self.space.params:
                half = self.width * (p.high - p.low) / 2
                low, high = max(p.low, initial[p.name] - half), min(p.high, initial[p.name] + half)
                values[p.name] = float(student.rng.uniform(low, high))
            tasks_now.append(self.space.task(**values))
        return Plan(train=tasks_now)

    def observe(self, student, plan, outcome, decisions):
        super().observe(student, plan, outcome, decisions)  # a "train" row per task
        mean = sum(s.mean_return for s in outcome.trained) / max(1, len(outcome.trained))
        if mean >= self.config.solved and self.width < 1.0:
            self.width = min(1.0, self.width + self.config.grow)
            reason = f"mean return {mean:.1f} >= solved {self.config.solved:g}"
            decisions.append(self.decision(student, None, "widen", f"{self.width:.1f}", reason))
        return []

    def curriculum_summary(self):
        return {"width": self.width}  # a summary.csv column, and a report panel

    def curriculum_state(self):
        return {"width": self.width}  # checkpointed, so a resumed run goes on exactly

    def load_curriculum_state(self, state):
        self.width = state["width"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", action="store_true", help="a tiny run, for the tests")
    small = parser.parse_args().small
    generations, solved = (3, 20.0) if small else (20, 300.0)
    space = tasks.get("cartpole")
    env = space.make_env()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=(16,))
    with EvaluationPool(space, policy, backend="local") as pool:
        # Keywords build WideningConfig: its fields are checked, as coevo-run checks them.
        curriculum = Widening(
            pool, optimizer=ES(population=16), generations=generations, solved=solved
        )
        for _ in range(generations):
            result = curriculum.step()
            widened = [d.reason for d in result.decisions if d.rule == "widen"]
            print(f"gen {curriculum.generation}: width {curriculum.width:.1f}", *widened)


if __name__ == "__main__":
    main()

"""coevo's curricula inside other trainers' own loops.

`coevo.integrations.ray_sampler`: a task sampler served by a Ray actor and the env that
draws its tasks from it (Ray core only). `coevo.integrations.rllib`: RLlib's new API stack
through a callback (needs `coevo[rllib]`). Nothing here is imported by the rest of coevo,
so coevo itself never needs RLlib.
"""

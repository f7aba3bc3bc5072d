#!/usr/bin/env bash
# Mazes: does PPO learn? (issue 30). PPO + DR on task=maze, the conv actor-critic against the
# MLP actor-critic on the flattened view, 3 seeds each, one core each run, one after another.
#   bash experiments/mazes_ppo/run_all.sh OUT_DIR
# Each run: 500 optimizer steps of 16 streams x 256 steps (2.05 M env steps), 16 new random
# mazes per step taken in turn at each reset, the 100 held-out mazes (6 designed, 94 random solvable) tested
# every 20 steps.
set -euo pipefail
out=${1:?OUT_DIR}
mkdir -p "$out"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
common=(task=maze optimizer=ppo curriculum=dr pool=local curriculum.generations=500
  curriculum.tasks_per_step=16 test_set.every=20 test_set.size=100
  optimizer.n_envs=16 optimizer.n_steps=256 optimizer.batch_size=1024 optimizer.n_epochs=4
  optimizer.learning_rate=0.0005 optimizer.gamma=0.99 optimizer.gae_lambda=0.95
  optimizer.ent_coef=0.01)
for seed in 0 1 2; do
  for policy in conv_actor_critic actor_critic; do
    dir=$out/${policy}_seed$seed
    /usr/bin/time -f "$dir: user %U s, sys %S s, wall %e s" taskset -c 0 \
      coevo-run "${common[@]}" policy=$policy seed=$seed hydra.run.dir="$dir" > "$dir.log" 2>&1
    tail -1 "$dir.log"
  done
done

"""Names of the files a run keeps in its directory that more than one part reads (a leaf:
it imports nothing of coevo, so the report and the runner may both take these)."""

CONFIG_FILE = "config.yaml"  # the run's resolved config
CHECKPOINTS = "checkpoints"  # the folder of gen_NNNNNN.pkl checkpoints
LOCK_FILE = ".coevo.lock"  # held while a process runs there

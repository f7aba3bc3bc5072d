"""`python -m coevo.compare`: coevo-compare without its installed script."""

from coevo.compare.cli import main

main()

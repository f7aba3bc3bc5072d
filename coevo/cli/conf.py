"""Where coevo's Hydra configs are (`CONF_DIR`), and the resolvers its presets and help use."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf


def _conf_dir() -> Path:
    """conf/ inside the installed package (a wheel ships it as coevo/conf), else the
    repository's top-level conf/ (an editable install or a source checkout)."""
    package = Path(__file__).resolve().parent.parent
    inside = package / "conf"
    return inside if (inside / "config.yaml").is_file() else package.parent / "conf"


CONF_DIR = _conf_dir()
# `${conf:PATH}` in a preset: PATH relative to coevo's conf/ directory, wherever coevo is
# installed and whatever the working directory (e.g. the example pairs file).
OmegaConf.register_new_resolver("conf", lambda path: str((CONF_DIR / path).resolve()), replace=True)


def _help_choices() -> str:
    """`coevo-run --help`'s choices per group, as Hydra's own help lists them (a
    `--config-dir` included; like Hydra's, not a `hydra.searchpath` given on the command
    line); the `*_defaults` files are shared settings of a group's options, not options."""
    from hydra.core.global_hydra import GlobalHydra

    loader = GlobalHydra.instance().config_loader()
    lines = []
    for group in sorted(g for g in loader.list_groups("") if g != "hydra"):
        options = [o for o in loader.get_group_options(group) if not o.endswith("_defaults")]
        if options:
            lines.append(f"{group}: {', '.join(options)}")
    return "\n".join(lines)


OmegaConf.register_new_resolver("coevo_help_choices", _help_choices, replace=True)

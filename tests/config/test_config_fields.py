"""Every config field, systematically: a wrong type, an out-of-range value, a value not among
the choices, NaN / infinity, an unknown key in every section. Each is refused with a message
that names the field and says what is allowed, by `parse_config` and by `coevo-run` (exit
code 2, on stderr, before Ray is imported).

The cases are generated from the config dataclasses, so a field added later is covered (and
a numeric field must say whether it has a range: see `test_every_numeric_field_has_a_range`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from phrases import assert_says

from coevo import config as config_module
from coevo import curricula, optimizers
from coevo.config import RunConfig, parse_config
from coevo.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
# Numeric fields that any finite value suits (scores and thresholds of the user's env).
UNBOUNDED = {
    "curriculum.repro_threshold",
    "curriculum.mc_lower",
    "curriculum.mc_upper",
    "curriculum.solved_threshold",
    "eligible.threshold",
    "test_set.threshold",
    "task.solved_score",
    "optimizer.ent_coef",  # PPO's entropy coefficient: any sign is a choice of the user's
}
# A wrong-type value per field type, and what the message must say is allowed instead.
WRONG = {
    int: ("three", "must be an integer"),
    float: ("fast", "must be a number"),
    str: (7, "must be a string"),
    bool: ("maybe", "must be true or false"),
    tuple: ("16", "must be a list of positive integers"),
    dict: (5, "must be a mapping"),
}


def _kind(hint: Any) -> type:
    """int, float, str, bool, tuple or dict; Optional[X] is X."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    return typing.get_origin(hint) or hint


def _sections(cls: type = RunConfig, prefix: str = "") -> list[tuple[str, type]]:
    """('', RunConfig) and (dotted path, class) of every nested section."""
    hints = typing.get_type_hints(cls)
    found = [(prefix.rstrip("."), cls)]
    for field in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[field.name]):
            found += _sections(hints[field.name], f"{prefix}{field.name}.")
    return found


def _nested(path: str, value: Any, plugin: tuple[str, str] | None = None) -> dict:
    for key in reversed(path.split(".")):
        value = {key: value}
    if plugin is not None and path != f"{plugin[0]}.name":
        value[plugin[0]]["name"] = plugin[1]
    return value


def _out_of_range(rule: config_module.Rule, kind: type) -> list[Any]:
    """Just outside each end of the field's range (the end itself when it is excluded)."""
    step = 1 if kind is int else 0.5
    values = []
    if rule.low is not None:
        values.append(kind(rule.low) if rule.open_low else kind(rule.low - step))
    if rule.high is not None:
        values.append(kind(rule.high) if rule.open_high else kind(rule.high + step))
    return values


INFOS = config_module.describe_fields()
FIELDS = [(info.path, _kind(info.hint)) for info in INFOS]
NUMERIC = [(i.path, _kind(i.hint), i.rule) for i in INFOS if _kind(i.hint) in (int, float)]
PLUGIN_SECTIONS = {"optimizer": optimizers, "curriculum": curricula}

# (case id, raw config, field named, start of the message after "field: ", value shown,
#  the plug-in it belongs to)
CASES: list[tuple[str, dict, str, str, Any, Any]] = []
for _info in INFOS:
    _path, _kind_, _rule, _plugin = _info.path, _kind(_info.hint), _info.rule, _info.plugin
    _tag = f"{_plugin[1]}:" if _plugin else ""
    if _plugin and _path == f"{_plugin[0]}.name":
        continue  # the plug-in's name: see the cases after this loop

    def _case(suffix, value, message, shown, path=_path, plugin=_plugin, tag=_tag):
        raw = _nested(path, value, plugin)
        CASES.append((f"{tag}{path}{suffix}", raw, path, message, shown, plugin))

    _value, _message = WRONG[_kind_]
    _case("-wrong-type", _value, _message, _value)
    if _rule.choices is not None:
        _message = f"unknown value 'nonsense'; allowed: {', '.join(_rule.choices)}"
        _case("-choice", "nonsense", _message, None)
    if _kind_ is float:
        for _value in (math.nan, math.inf, -math.inf):
            _case(f"={_value}", _value, "must be a finite number", _value)
    for _value in _out_of_range(_rule, _kind_):
        what = "an integer" if _kind_ is int else "a number"
        _case(f"={_value}", _value, f"must be {what}{_rule.range_text()}", _value)
for _section, _registry in PLUGIN_SECTIONS.items():
    _allowed_names = f"allowed: {', '.join(_registry.names())}, or package.module:Class"
    CASES.append(
        (
            f"{_section}.name-unknown",
            _nested(f"{_section}.name", "nonsense"),
            f"{_section}.name",
            f"unknown {_section} 'nonsense'; {_allowed_names}",
            None,
            None,
        )
    )
    CASES.append(
        (
            f"{_section}.name-wrong-type",
            _nested(f"{_section}.name", 7),
            f"{_section}.name",
            "must be a string",
            7,
            None,
        )
    )
    for _name in _registry.names():
        _cls = _registry.get(_name).config_class
        _key = f"{_section}.no_such_key"
        _message = f"unknown key; allowed: {', '.join(f.name for f in dataclasses.fields(_cls))}"
        _raw = _nested(_key, 1, (_section, _name))
        CASES.append((f"{_name}:{_key}", _raw, _key, _message, None, (_section, _name)))
for _section, _cls in _sections():
    if _section in PLUGIN_SECTIONS:
        continue
    _key = f"{_section}.no_such_key" if _section else "no_such_key"
    _allowed_keys = ", ".join(f.name for f in dataclasses.fields(_cls))
    _message = f"unknown key; allowed: {_allowed_keys}"
    CASES.append((f"{_key}", _nested(_key, 1), _key, _message, None, None))
    if _section:
        CASES.append(
            (
                f"{_section}-not-a-mapping",
                _nested(_section, 5),
                _section,
                "must be a mapping",
                5,
                None,
            )
        )
CASES.append(
    (
        "pool.address-format",
        _nested("pool.address", "10.0.0.1"),
        "pool.address",
        "must be 'auto' or HOST:PORT of a Ray cluster's head",
        "10.0.0.1",
        None,
    )
)


def test_every_numeric_field_has_a_range_or_is_unbounded_on_purpose():
    unreviewed = sorted(
        {
            path
            for path, _, rule in NUMERIC
            if rule.low is None and rule.high is None and path not in UNBOUNDED
        }
    )
    assert not unreviewed, f"give these a range (settings.setting(low=..., high=...)): {unreviewed}"


def test_the_cases_cover_every_field_and_section():
    named = {case[2] for case in CASES}
    assert {path for path, _ in FIELDS} <= named
    assert len(CASES) > 2 * len(FIELDS)


@pytest.mark.parametrize(
    ("raw", "field", "message", "value"),
    [case[1:5] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_a_bad_value_names_the_field_and_what_is_allowed(raw, field, message, value):
    with pytest.raises(ConfigError) as info:
        parse_config(raw)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: {message}"), str(info.value)
    if value is not None:
        assert str(info.value).endswith(f"got {value!r}"), str(info.value)


def _override(path: str, value: Any) -> str:
    """A Hydra command-line override setting `path` to `value` ('++': set or add)."""
    if isinstance(value, float) and not math.isfinite(value):
        text = {math.inf: "inf", -math.inf: "-inf"}.get(value, "nan")
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value)
    return f"++{path}={text}"


def _leaf(raw: dict) -> tuple[str, Any]:
    path, value = [], raw
    while isinstance(value, dict) and len(value) == 1:
        key, value = next(iter(value.items()))
        path.append(key)
    return ".".join(path), value


# coevo-run's own loop over overrides: one process runs the CLI entry point once per case.
_CLI_LOOP = """
import contextlib, io, json, sys
from coevo import cli
cases, run_dir = json.loads(sys.argv[1]), sys.argv[2]
results = []
for overrides in cases:
    sys.argv = ["coevo-run", *overrides, "hydra.run.dir=" + run_dir]
    err = io.StringIO()
    code = None
    with contextlib.redirect_stderr(err):
        try:
            cli.run_main()
        except SystemExit as exit:
            code = exit.code
    results.append([overrides, code, err.getvalue()])
print(json.dumps({"results": results, "ray imported": "ray" in sys.modules}))
"""


def test_coevo_run_refuses_every_case_with_exit_code_2_before_ray_starts(tmp_path):
    # Every field's refusal is checked through parse_config above; here, that each kind of
    # refusal reaches the command line from each section and plug-in (a coevo-run costs
    # ~0.4 s of Hydra composition): the last case of each plug-in and of each (section,
    # kind), and every section's unknown key.
    sections = {section for section, _ in _sections()}
    last: dict[Any, tuple[list[str], str, str]] = {}
    for case_id, raw, field, message, _, plugin in CASES:
        if plugin is not None:  # the group picks the plug-in; `name` would be a 2nd leaf
            raw = {plugin[0]: {k: v for k, v in raw[plugin[0]].items() if k != "name"}}
        path, value = _leaf(raw)
        if path == "resume":  # coevo-run reads resume=RUN_DIR itself: see below
            continue
        if path in sections:  # a whole section is a Hydra config group, not a value
            continue
        group = [f"{plugin[0]}={plugin[1]}"] if plugin else []
        section = path.rpartition(".")[0]
        # A plug-in's fields: one case each (its config class reached by name); a section's
        # own: one per kind of refusal.
        key = (plugin, section) if plugin else (section, _refusal_kind(case_id, message))
        last[key] = ([*group, _override(path, value)], field, message)
    cases = list(last.values())
    cases.append((["resume=/no/such/run"], None, "/no/such/run/config.yaml not found"))
    # The pairs file is read (before Ray starts) in eligible_parents mode.
    cases.append(
        (
            ["experiment=eligible_parents", "eligible.pairs_file=/no/such/pairs.yaml"],
            "eligible.pairs_file",
            "/no/such/pairs.yaml not found",
        )
    )
    done = subprocess.run(
        [sys.executable, "-c", _CLI_LOOP, json.dumps([c[0] for c in cases]), str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["ray imported"] is False
    for (override, field, message), (ran, code, stderr) in zip(
        cases, report["results"], strict=True
    ):
        assert ran == override
        assert code == 2, (override, stderr)
        prefix = f"coevo-run: error: {field}: " if field else "coevo-run: error: "
        assert stderr.startswith(prefix), (override, stderr)
        assert message in stderr, (override, stderr)


def _refusal_kind(case_id: str, message: str) -> str:
    """Which check refused a case: its type, its choices, finiteness, its range, or another
    (an unknown key, a name that does not resolve): the message's start."""
    if case_id.endswith("-wrong-type"):
        return "type"
    if case_id.endswith("-choice"):
        return "choice"
    if message.startswith("must be a finite"):
        return "finite"
    return "range" if message.startswith("must be") else message[:20]


def _section_class(path: str, plugin: tuple[str, str] | None) -> type:
    """The config dataclass holding the field at `path` (a plug-in's own, or a section's)."""
    section = path.rpartition(".")[0]
    if plugin is not None:
        return PLUGIN_SECTIONS[plugin[0]].get(plugin[1]).config_class
    if section in PLUGIN_SECTIONS:  # its `name`: the default plug-in's class
        return type(getattr(RunConfig(), section))
    return dict(_sections())[section]


# The cases of one field's value (not unknown keys, whole sections or names to resolve).
FIELD_CASES = [
    case
    for case in CASES
    if case[2] in {path for path, _ in FIELDS}
    and not case[3].startswith(("unknown optimizer", "unknown curriculum"))
    and not case[0].endswith("-not-a-mapping")
]


@pytest.mark.parametrize(
    ("raw", "field", "message", "value", "plugin"),
    [case[1:6] for case in FIELD_CASES],
    ids=[case[0] for case in FIELD_CASES],
)
def test_configs_built_from_python_refuse_what_the_config_file_would(
    raw, field, message, value, plugin
):
    """`ESConfig(population=-3)` in a user's script: the same error as from coevo-run, when
    the config is built (not later, inside numpy)."""
    config_class = _section_class(field, plugin)
    with pytest.raises(ConfigError) as info:
        given = raw
        for key in field.split("."):
            given = given[key]
        config_class(**{field.rpartition(".")[2]: given})
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: {message}"), str(info.value)
    if value is not None:
        assert str(info.value).endswith(f"got {value!r}"), str(info.value)


def test_configs_built_from_python_check_across_fields_and_take_typed_values():
    from coevo.config import PoolConfig
    from coevo.optimizers.es import ESConfig

    with pytest.raises(ConfigError, match=r"^optimizer.sigma_min: must be <= optimizer.sigma"):
        ESConfig(sigma=0.1, sigma_min=0.5)
    with pytest.raises(ConfigError, match=r"^pool.address: must be 'auto' or HOST:PORT"):
        PoolConfig(address="10.0.0.1")
    with pytest.raises(ConfigError, match=r"^pool.episode_timeout_s: only the ray backend"):
        PoolConfig(backend="local", episode_timeout_s=5.0)
    with pytest.raises(ConfigError, match=r"^eligible.pairs_file: required with mode="):
        RunConfig(mode="eligible_parents")
    config = ESConfig(population=10.0, lr=1)
    assert (type(config.population), type(config.lr)) == (int, float)
    # Every config class builds from its defaults.
    for registry in PLUGIN_SECTIONS.values():
        for name in registry.names():
            registry.get(name).config_class()
    for _, section_class in _sections():
        section_class()


def _examples() -> list[tuple[type, str, Any, str]]:
    from coevo.config import PoolConfig
    from coevo.curricula.accel import ACCELConfig
    from coevo.curricula.plr import PLRConfig
    from coevo.curricula.poet.loop import EnhancedPoetConfig
    from coevo.optimizers.es import ESConfig
    from coevo.optimizers.ppo_config import PPOConfig
    from coevo.policies.config import PolicyConfig

    return [
        (ESConfig, "population", -3, "must be an integer >= 1, got -3"),
        (PPOConfig, "n_steps", 0, "must be an integer >= 1, got 0"),
        (PLRConfig, "buffer_size", 0, "must be an integer >= 1, got 0"),
        (ACCELConfig, "buffer_size", -1, "must be an integer >= 1, got -1"),  # inherited
        (EnhancedPoetConfig, "novelty", "x", "unknown value 'x'; allowed: params, pata_ec"),
        (PoolConfig, "num_workers", 0, "must be an integer >= 1, got 0"),
        (PolicyConfig, "activation", "gelu", "unknown value 'gelu'; allowed: tanh, relu"),
    ]


def test_configs_built_from_python_name_the_field_and_what_is_allowed():
    """The usual mistakes in a script are refused when the config is built, with the text
    coevo-run gives for the same value (the parametrized test above covers every field;
    these read as examples)."""
    for cls, name, value, allowed in _examples():
        with pytest.raises(ConfigError) as built:
            cls(**{name: value})
        assert built.value.field == f"{cls.section}.{name}"
        assert_says(str(built.value), f"{cls.section}.{name}: ", *allowed.split("; "))
        section = {name: value}
        if "name" in cls.__dataclass_fields__:  # a plug-in: coevo-run picks it by name
            section["name"] = cls().name
        with pytest.raises(ConfigError) as parsed:
            parse_config({cls.section: section})
        assert str(parsed.value) == str(built.value)  # the same refusal both ways


def test_a_section_given_as_a_mapping_is_refused_when_built_from_python():
    """RunConfig(pool={...}) was taken as it came: its values unchecked, failing later."""
    with pytest.raises(ConfigError, match=r"^pool: must be a config section such as PoolConfig"):
        RunConfig(pool={"num_workers": 0})
    with pytest.raises(ConfigError, match=r"^optimizer: must be a config section such as Opt"):
        RunConfig(optimizer="es")


def test_a_plugin_config_with_its_own_post_init_is_checked_too():
    """A user's config whose own __post_init__ (not calling super) would have replaced the
    one that checks; the checks run first, so its __post_init__ sees checked values."""
    from coevo.optimizers.base import OptimizerConfig
    from coevo.settings import setting

    seen = []

    @dataclasses.dataclass(frozen=True)
    class HillConfig(OptimizerConfig):
        name: str = setting("hill")
        tries: int = setting(3, low=1)

        def __post_init__(self) -> None:
            seen.append(self.tries)

    with pytest.raises(ConfigError, match=r"^optimizer.tries: must be an integer >= 1, got 0$"):
        HillConfig(tries=0)
    assert HillConfig(tries=4.0).tries == 4 and seen == [4]


def test_worker_limits_refuse_as_pool_config_does():
    """The limits the pool enforces and pool.* in the run config share one rule and text."""
    from coevo.config import PoolConfig
    from coevo.pool.limits import WorkerLimits

    for name in ("episode_timeout_s", "worker_memory_mb"):
        messages = []
        for build in (WorkerLimits, PoolConfig):
            with pytest.raises(ConfigError) as info:
                build(**{name: 0})
            messages.append(str(info.value))
        assert messages == [f"pool.{name}: must be a number > 0, got 0.0"] * 2
    assert WorkerLimits() == WorkerLimits(None, None)


def test_every_config_class_of_coevo_builds_from_its_defaults():
    """Each `Checked` dataclass in coevo (bases, plug-ins, sections, the worker limits)."""
    import coevo.pool.limits  # noqa: F401
    from coevo.settings import Checked

    for registry in PLUGIN_SECTIONS.values():  # plug-in modules load when first asked for
        for name in registry.names():
            registry.get(name)
    found, todo = [], [Checked]
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if dataclasses.is_dataclass(cls) and cls.__module__.startswith("coevo."):
            found.append(cls)
    for cls in found:
        cls()
    names = {cls.__name__ for cls in found}
    assert {"ESConfig", "PPOConfig", "ACCELConfig", "EnhancedPoetConfig", "WorkerLimits"} <= names
    assert {"ARSConfig", "PLRConfig", "DRConfig", "ALPGMMConfig", "LevelSamplingConfig"} <= names
    assert {"RunConfig", "TestSetConfig", "OptimizerConfig", "CurriculumConfig"} <= names


def test_a_plugin_without_a_config_class_of_its_own_is_told_to_write_one():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # user_curricula
    raw = {"optimizer": {"name": "user_curricula:NoConfigES", "sigma": 0.2}}
    with pytest.raises(ConfigError) as refused:
        parse_config(raw)
    assert refused.value.field == "optimizer.sigma"
    assert_says(
        str(refused.value),
        "unknown key",
        "NoConfigES.config_class is OptimizerConfig",
        "give NoConfigES a config_class, a frozen dataclass",
    )


def test_a_plugin_whose_own_config_adds_no_field_gets_the_plain_unknown_key_message():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # user_curricula
    raw = {"optimizer": {"name": "user_curricula:NameOnlyOptimizer", "sigma": 0.2}}
    with pytest.raises(ConfigError, match=r"^optimizer.sigma: unknown key; allowed: name$"):
        parse_config(raw)


def test_a_misspelled_keyword_of_a_python_config_names_its_section_and_the_fix():
    """`PLRConfig(buffer_sze=3)` in a script: a ConfigError like the config file's, with the
    closest key (it was Python's bare TypeError 'unexpected keyword argument')."""
    from coevo import PLRConfig, PPOConfig

    with pytest.raises(ConfigError) as info:
        PLRConfig(buffer_sze=3)
    assert info.value.field == "curriculum.buffer_sze"
    assert_says(
        str(info.value), "unknown key of PLRConfig", "did you mean buffer_size?", "allowed: name,"
    )
    with pytest.raises(ConfigError, match=r"^optimizer.nsteps: unknown key of PPOConfig \(did"):
        PPOConfig(nsteps=64)
    assert dataclasses.replace(PLRConfig(buffer_size=8), buffer_size=9).buffer_size == 9
    # What a plug-in's __init__ takes beyond its fields (an InitVar) is a keyword too.
    from coevo.curricula.base import CurriculumConfig

    @dataclasses.dataclass(frozen=True)
    class Scaled(CurriculumConfig):
        extra: int = 1
        scale: dataclasses.InitVar[float] = 1.0

        def __post_init__(self, scale: float) -> None:
            object.__setattr__(self, "extra", int(self.extra * scale))

    assert Scaled(extra=2, scale=3.0).extra == 6
    with pytest.raises(ConfigError, match=r"unknown key of Scaled \(did you mean scale\?\)"):
        Scaled(scal=3.0)

"""Settings: declared once, layered file < env < flags, clear errors naming key, value and file."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop_mem.engine.config import SETTINGS, load_config, save_config, settings_markdown
from desktop_mem.engine.models import ValidationError


def test_defaults_follow_the_references(tmp_path: Path) -> None:
    cfg = load_config(None, env={})
    assert cfg["retrieval.top_k"] == 5 and cfg["retrieval.mmr_lambda"] == 0.7
    assert cfg["retrieval.recency_weight"] == 0.2
    # Not 001's 0.35: measured on the shipped cross-encoder, any threshold prunes evidence
    # (docs/benchmarks.md, "Better models").
    assert cfg["retrieval.score_threshold"] == 0.0
    assert cfg["memory.max_entries"] == 500 and cfg["memory.summary_threshold"] == 40
    assert cfg["memory.summary_keep_last"] == 12 and cfg["memory.enable_summarization"] is True
    assert "desktop-mem" in str(cfg.store_path)


def test_layers_file_then_env_then_flags(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("llm:\n  model: from-file\n  base_url: http://file/v1\nretrieval:\n  top_k: 7\n")
    env = {"OPENAI_MODEL": "from-env", "OPENAI_SUMMARY_MODEL": "small", "DESKTOP_MEM_STORE": "/x/store"}
    cfg = load_config(f, env=env, flags={"retrieval.top_k": "9"})
    assert cfg["llm.model"] == "from-env" and cfg["llm.base_url"] == "http://file/v1"
    assert cfg["llm.summary_model"] == "small" and cfg["retrieval.top_k"] == 9
    assert cfg.store_path == Path("/x/store")
    assert cfg.source("llm.model") == "environment variable OPENAI_MODEL"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("llm:\n  modle: x\n", "llm.modle"),
        ("retrieval:\n  top_k: many\n", "'many'"),
        ("context:\n  strategy: magic\n", "must be one of"),
        ("retrieval:\n  mmr_lambda: 3\n", "maximum"),
        ("- a\n", "mapping"),
        ("llm: [unclosed\n", "not valid YAML"),
    ],
)
def test_bad_config_names_key_value_and_file(tmp_path: Path, text: str, needle: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(ValidationError) as info:
        load_config(f, env={})
    assert needle in str(info.value) and str(f) in str(info.value)


def test_save_config_is_private_and_round_trips(tmp_path: Path) -> None:
    f = tmp_path / "sub" / "config.yaml"
    save_config(f, {"llm.api_key": "sk-test", "retrieval.top_k": 3})
    assert f.stat().st_mode & 0o777 == 0o600
    cfg = load_config(f, env={})
    assert cfg["llm.api_key"] == "sk-test" and cfg["retrieval.top_k"] == 3
    assert cfg.as_dict()["llm.api_key"] == "***"


def test_every_setting_is_documented() -> None:
    doc = settings_markdown()
    for s in SETTINGS:
        assert f"`{s.name}`" in doc and s.description


def test_configuration_doc_is_generated_from_the_declarations() -> None:
    doc = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
    assert doc.read_text(encoding="utf-8") == settings_markdown(), (
        "docs/configuration.md is stale: regenerate it from "
        "desktop_mem.engine.config.settings_markdown()"
    )


def test_typed_setting_names_match_the_declarations() -> None:
    """Each setting is in exactly the Literal list of its declared type (what mypy checks lookups by)."""
    from typing import get_args

    from desktop_mem.engine import config as cfg

    typed = {str: cfg.StrSetting, int: cfg.IntSetting, float: cfg.FloatSetting, bool: cfg.BoolSetting}
    for setting in cfg.SETTINGS:
        lists = [t for t, lit in typed.items() if setting.name in get_args(lit)]
        assert lists == [setting.type], (
            f"{setting.name} ({setting.type.__name__}) must be listed in exactly the "
            f"{setting.type.__name__.capitalize()}Setting Literal of engine/config.py"
        )
    declared = {s.name for s in cfg.SETTINGS}
    for lit in typed.values():
        assert set(get_args(lit)) <= declared


def test_the_parts_settings_sections_take_their_defaults_from_the_one_declaration() -> None:
    """RetrievalSettings and StrategySettings are typed sections of SETTINGS: every field named
    like a setting of its groups has that setting's declared default, and a section built from the
    default config equals the section's own defaults (no hand copy to drift)."""
    from dataclasses import fields

    from desktop_mem.engine.chat.context import StrategySettings
    from desktop_mem.engine.chat.service import strategy_settings
    from desktop_mem.engine.config import BY_NAME
    from desktop_mem.engine.index.index_factory import retrieval_settings
    from desktop_mem.engine.index.retrieval import RetrievalSettings

    defaults = load_config(None, env={})
    for section, groups, built in ((RetrievalSettings, ("retrieval",), retrieval_settings(defaults)),
                                   (StrategySettings, ("context", "memory"), strategy_settings(defaults))):
        named = {f.name: f.default for f in fields(section)
                 if any(f"{g}.{f.name}" in BY_NAME for g in groups)}
        assert len(named) >= 5, section
        for name, value in named.items():
            declared = next(BY_NAME[f"{g}.{name}"].default for g in groups if f"{g}.{name}" in BY_NAME)
            assert value == declared, f"{section.__name__}.{name} = {value!r}, declared {declared!r}"
        assert built == section(), f"{section.__name__} from the default settings differs from its defaults"


def test_every_setting_named_in_a_section_reaches_it_when_the_user_changes_it() -> None:
    """A changed `retrieval.*`, `context.*` or `memory.*` value is what the read path and the
    in-session strategies get: the sections are filled from the declarations, not by hand."""
    from dataclasses import fields

    from desktop_mem.engine.chat.context import StrategySettings
    from desktop_mem.engine.chat.service import strategy_settings
    from desktop_mem.engine.config import BY_NAME
    from desktop_mem.engine.index.index_factory import retrieval_settings
    from desktop_mem.engine.index.retrieval import RetrievalSettings

    def changed(name: str) -> object:
        s = BY_NAME[name]
        if s.choices:
            return next(c for c in s.choices if c != s.default)
        if s.type is float:
            return 0.5 if s.default != 0.5 else 0.25
        return s.default + 1 if s.maximum is None or s.default + 1 <= s.maximum else s.default - 1

    for section, groups, build in ((RetrievalSettings, ("retrieval",), retrieval_settings),
                                   (StrategySettings, ("context", "memory"), strategy_settings)):
        named = {f.name: next(f"{g}.{f.name}" for g in groups if f"{g}.{f.name}" in BY_NAME)
                 for f in fields(section) if any(f"{g}.{f.name}" in BY_NAME for g in groups)}
        flags = {setting: changed(setting) for setting in named.values()}
        built = build(load_config(None, env={}, flags=flags))
        for field_name, setting in named.items():
            assert getattr(built, field_name) == flags[setting], f"{setting} is lost on the way"


def test_the_typed_setting_names_are_the_generated_text() -> None:
    """The Literal lists mypy checks `config[...]` by are generated from SETTINGS, not kept by hand:
    the block in engine/config.py is exactly `typed_names_source()` (a new setting fails here until
    the block is regenerated, and a hand edit of the block fails too)."""
    import desktop_mem.engine.config as config_module
    from desktop_mem.engine.config import typed_names_source

    source = Path(config_module.__file__).read_text(encoding="utf-8")
    start = source.index("StrSetting = Literal[")
    end = source.index("]\n", source.index("BoolSetting = Literal[")) + 2
    assert source[start:end] == typed_names_source(), "regenerate the block: print(typed_names_source())"

"""Tab completion after `=` (the values a strategy parameter takes) and of template names."""

from __future__ import annotations

from pathlib import Path

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from registered import open_session
from test_repl_input import TAB, menu, shows, tty, typing  # noqa: F401  (the fixture)

from chatmem.config.settings import Settings
from chatmem.providers.scripted import ScriptedProvider
from chatmem.render import make_console
from chatmem.repl.completion import SlashCompleter
from chatmem.repl.loop import Repl
from chatmem.store import Store


def repl_with_templates(tmp_path: Path) -> tuple[Store, Repl]:
    """A chat whose config names one template and whose templates folder holds two more
    files, one of them not valid TOML."""
    config = tmp_path / "config.toml"
    config.write_text("", encoding="utf-8")
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "译者.toml").write_text(
        'system = "把用户的话翻译成英文。"\nstrategy = "window:k=1"\n', encoding="utf-8")
    (folder / "broken.toml").write_text("system = \n", encoding="utf-8")
    settings = Settings(system="Be brief.", source=config, templates={
        "translate": {"system": "Translate to English.", "model": "scripted"}})
    store = Store(tmp_path / "c.db")
    engine = open_session(store, settings, ScriptedProvider(), "t", strategy="window",
                          params={"k": "3"})
    return store, Repl(engine, make_console(), make_console(stderr=True))


def offered(repl: Repl, text: str) -> list[tuple[str, str]]:
    return [(c.text, c.display_meta_text) for c in
            SlashCompleter(repl).get_completions(Document(text), CompleteEvent())]


def test_a_parameter_completes_to_the_values_it_takes(tmp_path: Path) -> None:
    store, repl = repl_with_templates(tmp_path)
    with store:
        # Choices, each once, the default said; in the colon form and after a space.
        assert offered(repl, "/strategy retrieval:mode=") == [
            ("retrieval:mode=hybrid", "default"),
            ("retrieval:mode=bm25", "rank by bm25 (words), dense (meaning) or hybrid (both)"),
            ("retrieval:mode=dense", "rank by bm25 (words), dense (meaning) or hybrid (both)")]
        assert [t for t, _ in offered(repl, "/strategy retrieval:top_k=3,mode=d")] == [
            "retrieval:top_k=3,mode=dense"]
        assert [t for t, _ in offered(repl, "/strategy retrieval mode=b")] == ["mode=bm25"]
        # A number: the value in use (this session runs window k=3), then the default.
        assert offered(repl, "/strategy window:k=") == [
            ("window:k=3", "in use; a whole number, 0 or more"),
            ("window:k=5", "default; a whole number, 0 or more")]
        assert offered(repl, "/strategy window k=") == [
            ("k=3", "in use; a whole number, 0 or more"),
            ("k=5", "default; a whole number, 0 or more")]
        # In a combination, the part's own parameter; an unknown one offers nothing.
        assert [t for t, _ in offered(repl, "/strategy window+entity:entity.k=")] == [
            "window+entity:entity.k=3"]
        assert offered(repl, "/strategy window:nosuch=") == []
        assert offered(repl, "/strategy nosuch:k=") == []


def test_template_completes_to_the_templates_and_what_each_sets(tmp_path: Path) -> None:
    store, repl = repl_with_templates(tmp_path)
    with store:
        menu_rows = offered(repl, "/template ")
        assert [name for name, _ in menu_rows] == ["broken", "translate", "译者"]
        meta = dict(menu_rows)
        assert meta["translate"] == "model scripted · system Translate to English."
        assert meta["译者"] == "strategy window:k=1 · system 把用户的话翻译成英文。"
        assert meta["broken"].startswith("cannot be used: ")  # said, not raised
        assert [name for name, _ in offered(repl, "/template 译")] == ["译者"]


def test_tab_completes_a_value_at_the_prompt(tmp_path: Path, tty: None) -> None:  # noqa: F811
    store, repl = repl_with_templates(tmp_path)
    typed = "/strategy retrieval:mode=b"
    with store, typing(repl, typed, menu(typed), TAB, shows("/strategy retrieval:mode=bm25"),
                       "\r", "/template tr", menu("/template tr"), TAB,
                       shows("/template translate"), "\r") as lines:
        assert next(lines) == "/strategy retrieval:mode=bm25"
        assert next(lines) == "/template translate"


def test_a_fact_key_completes_from_its_traditional_or_full_width_form(tmp_path: Path) -> None:
    # /forget 過敏 forgets 过敏, so /forget 預<Tab> offers 预约时间 (it offered nothing).
    store, repl = repl_with_templates(tmp_path)
    with store:
        repl.command("/remember 预约时间：周五下午")
        repl.command("/remember 过敏：花生")
        repl.command("/remember city: Oslo")
        assert [t for t, _ in offered(repl, "/forget 預")] == ["预约时间"]
        assert [t for t, _ in offered(repl, "/forget 過敏")] == ["过敏"]
        assert [t for t, _ in offered(repl, "/forget 过")] == ["过敏"]
        assert [t for t, _ in offered(repl, "/forget ＣＩ")] == ["city"]
        assert offered(repl, "/forget 周") == []

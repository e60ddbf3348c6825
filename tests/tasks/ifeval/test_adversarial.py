"""The generated adversarial set that the agreement test runs: deterministic, every official id, >= 25 cases each,
the hand-written edge cases with their mutations (CRLF, padding, chatty lines for loose mode, markdown, unicode)."""

import collections

import ifeval_adversarial as adversarial
from ifeval_adversarial_cases import BASES

from mrtpo_viz.tasks.ifeval import OFFICIAL_IDS, validate_kwargs


def test_the_set_is_deterministic_and_covers_every_official_id():
    cases = adversarial.generate(seed=0)
    assert cases == adversarial.generate(seed=0) and cases != adversarial.generate(seed=1)
    counts = collections.Counter(c.id for c in cases)
    assert set(counts) == set(OFFICIAL_IDS) == set(BASES)
    # 1,459 cases with the full Punkt model; thresholds come from our own counts, so the embedded lists give a few less
    assert min(counts.values()) >= adversarial.MIN_PER_INSTRUCTION == 25 and len(cases) >= 1450
    assert all(validate_kwargs(c.id, c.kwargs) is not None for c in cases)  # valid kwargs throughout


def test_mutations_and_edges_are_there():
    labels = collections.Counter(c.label.split("/")[-1].split(" ")[0] for c in adversarial.generate(seed=0))
    assert {"crlf", "padded", "chatty", "bold", "curly", "unicode", "doubled", "stars"} <= set(labels)
    assert labels["blank"] == 0 and sum(v for k, v in labels.items() if k == "threshold") > 100
    assert labels["empty"] == labels["whitespace"] == 25  # one blank and one whitespace-only response per id
    assert adversarial.MUTATIONS["crlf"]("a\nb") == "a\r\nb"


def test_the_multilingual_block_covers_every_id_and_script():
    import ifeval_adversarial_unicode as unicode_block

    cases = unicode_block.block()
    assert cases == unicode_block.block()  # deterministic
    by_id = collections.defaultdict(set)
    for c in cases:
        by_id[c.id].add(c.label.split("/")[1])
    assert set(by_id) == set(OFFICIAL_IDS)
    assert all(scripts == set(unicode_block.TEXTS) for scripts in by_id.values())  # every script for every id
    assert {
        "devanagari",
        "bengali",
        "thai",
        "arabic",
        "hebrew",
        "persian",
        "turkish",
        "cjk",
        "nfd_latin",
        "emoji_zwj",
        "superscripts",
        "separators",
        "spaces",
    } == set(unicode_block.TEXTS)
    assert all(validate_kwargs(c.id, c.kwargs) is not None for c in cases)
    assert sum(1 for c in cases if 0 in c.kwargs.values()) > 100  # counts of 0, as the official classes take them

"""The multilingual and Unicode block of the adversarial set: ``block() -> list[Case]``, for every official id.

Texts in Devanagari, Bengali, Thai, Arabic with harakat, Hebrew with niqqud, Persian with ZWNJ, Turkish, CJK, NFD
(decomposed) Latin and emoji ZWJ sequences, and texts built around characters where engines and tokenizers part:
superscripts, circled digits and letters, vulgar fractions, the separators U+001C..U+001F, NBSP and the other
Unicode spaces. Kwargs use the same characters (keywords, forbidden words, markers, splitters, first words, end
phrases). Counting instructions get thresholds at, one below and one above our own count and 0 (which the official
classes accept; lm-eval's loop would drop it, see ``ifeval_reference.compare``). Deterministic: no randomness.
"""

from __future__ import annotations

import unicodedata

from ifeval_adversarial import Case
from mrtpo_viz.tasks.ifeval import instruction_checks as C
from mrtpo_viz.tasks.ifeval import text_units as T

NFD = lambda s: unicodedata.normalize("NFD", s)  # noqa: E731

TEXTS = {
    "devanagari": "नमस्ते दुनिया। यह एक परीक्षण वाक्य है. क्या आप ठीक हैं? हाँ, मैं ठीक हूँ।",
    "bengali": "আমি বাংলায় গান গাই. তুমি কেমন আছ? আমরা সবাই ভালো আছি।",
    "thai": "สวัสดีครับ ผมชื่อสมชาย. วันนี้อากาศดีมาก! ไปเที่ยวกันไหม",
    "arabic": "السَّلَامُ عَلَيْكُمْ. كَيْفَ حَالُكَ؟ أَنَا بِخَيْرٍ، شُكْرًا.",
    "hebrew": "שָׁלוֹם עוֹלָם. מַה שְּׁלוֹמְךָ? אֲנִי בְּסֵדֶר גָּמוּר.",
    "persian": "من می‌خواهم به خانه بروم. کتاب‌ها را بیاور. آن‌ها رفتند!",
    "turkish": "İstanbul'da ılık bir gün. IŞIK ve ışık aynı değil. İYİ GÜNLER, Ayşe!",
    "cjk": "我喜欢学习中文。日本語も勉強しています。한국어도 좋아요. Tokyo 東京 is big.",
    "nfd_latin": NFD("Việt Nam là một đất nước đẹp. Café crème, s'il vous plaît. ÉCOLE NORMALE. Ça va?"),
    "emoji_zwj": "Family \U0001f468\u200d\U0001f469\u200d\U0001f467 is here. Flag \U0001f3f3\ufe0f\u200d\U0001f308 "
    "too! OK \U0001f44d\U0001f3fd. NASA \U0001f680 launched.",
    "superscripts": "E = mc² and x³ + y⁴. Steps ① ② ③ done. Add ½ cup and ¾ spoon. Ⓐ Ⓑ are CIRCLED.",
    "separators": "Hello.\x1cWorld is here.\x1dNext one.\x1eMore text.\x1fEnd. FILE\x1cSEP",
    "spaces": "Hello.\u00a0World. One\u2003two\u2009three\u3000four\u202ffive\u205fsix\u1680seven. "
    "LAST\u00a0WORD\u2028line\u2029para\x85next.",
}
"""Label -> text; each has several sentences, words and (mostly) punctuation."""

PARAGRAPHS = {k: v.replace(". ", ".\n\n", 2) for k, v in TEXTS.items()}
"""The texts cut into paragraphs by blank lines after their first two sentences."""

KEYWORDS = {
    "devanagari": ["नमस्ते", "स्ते", "ठीक"],
    "bengali": ["বাংলায়", "গান"],
    "thai": ["สวัสดี", "ครับ"],
    "arabic": ["عَلَيْكُمْ", "عليكم"],
    "hebrew": ["שָׁלוֹם", "שלום"],
    "persian": ["می‌خواهم", "میخواهم"],
    "turkish": ["ılık", "istanbul", "ışık", "İYİ"],
    "cjk": ["中文", "東京", "한국어"],
    "nfd_latin": [NFD("Việt"), "Việt", "café", NFD("école")],
    "emoji_zwj": ["\U0001f468", "\u200d", "nasa"],
    "superscripts": ["mc", "x", "①", "½", "ⓐ"],
    "separators": [r"hello\sworld", r"file\ssep", "world"],
    "spaces": [r"one\stwo", "hello world", r"world\b", "[[:alpha:]]"],
}
"""Label -> keywords tried on that text (plain words, parts of words, NFC against NFD, joiners, escapes)."""

MARKERS = {
    "devanagari": "पुनश्च",
    "arabic": "مُلاحَظَة",
    "turkish": "Not:",
    "cjk": "追伸",
    "nfd_latin": NFD("Réf."),
    "spaces": "P.S.",
    "separators": "P.P.S",
    "superscripts": "N.B.²",
}
"""Label -> postscript marker (appended to the text after a line break, with the label's own space)."""

SPLITTERS = {
    "devanagari": "अनुभाग",
    "arabic": "قسم",
    "turkish": "BÖLÜM",
    "cjk": "節",
    "nfd_latin": NFD("Sèction"),
    "spaces": "SECTION",
    "separators": "SECTION",
    "hebrew": "פֶּרֶק",
}
"""Label -> section splitter (sections numbered with ASCII, Devanagari or Arabic-Indic digits)."""

SPACE_OF = {"spaces": "\u00a0", "separators": "\x1c", "cjk": "\u3000"}
DIGITS = {"devanagari": "१२", "arabic": "١٢", "bengali": "১২"}

COUNTS = {
    "length_constraints:number_words": ("num_words", T.count_words, "relation"),
    "length_constraints:number_sentences": ("num_sentences", T.count_sentences, "relation"),
    "change_case:capital_word_frequency": ("capital_frequency", T.count_capital_words, "capital_relation"),
    "detectable_format:number_bullet_lists": ("num_bullets", lambda r: len(C.bullet_matches(r)), None),
    "length_constraints:number_paragraphs": ("num_paragraphs", lambda r: C.paragraph_count(r) or 0, None),
    "detectable_content:number_placeholders": ("num_placeholders", lambda r: len(C.placeholder_spans(r)), None),
    "detectable_format:number_highlighted_sections": ("num_highlights", lambda r: len(C.highlight_matches(r)), None),
}
LANGS = {
    "devanagari": "hi",
    "bengali": "bn",
    "thai": "th",
    "arabic": "ar",
    "hebrew": "he",
    "persian": "fa",
    "turkish": "en",
    "cjk": "ja",
    "nfd_latin": "vi",
    "emoji_zwj": "en",
    "superscripts": "en",
}


def _threshold(iid: str, text: str, label: str) -> list[Case]:
    key, count, rel_key = COUNTS[iid]
    n = count(text)
    out = []
    for t in sorted({0, max(0, n - 1), n, n + 1}):
        for rel in ("less than", "at least") if rel_key else (None,):
            kw = {key: t, **({rel_key: rel} if rel_key else {})}
            out.append(Case(iid, kw, text, f"unicode/{label}/threshold {rel or '=='} {t} (count {n})"))
    return out


def _markup(label: str, text: str) -> dict[str, str]:
    """The text dressed for the format instructions (bullets, placeholders, highlights, ***, title, JSON)."""
    parts = [p.strip() for p in text.replace("?", ".").replace("!", ".").replace("।", ".").split(".") if p.strip()]
    space = SPACE_OF.get(label, " ")
    return {
        "bullets": "\n".join(f"*{space}{p}" for p in parts[:3]) + f"\n-{space}{parts[-1]}",
        "placeholders": " ".join(f"[{p.split()[0]}]" for p in parts[:3]) + f" [{space}]",
        "highlights": " ".join(f"*{p}*" for p in parts[:2]) + f" **{parts[-1]}**",
        "dividers": f"{parts[0]}{space}***{space}{parts[1] if len(parts) > 1 else parts[0]}",
        "title": f"<<{parts[0]}>>\n{text}",
        "json": f'{space}```json\n{{"{parts[0]}": "{parts[-1]}"}}\n```',
        "two": f"{parts[0]}\n******\n{parts[-1]}",
    }


def _by_text(iid: str, label: str, text: str) -> list[Case]:
    """Cases of one instruction on one text (with kwargs in the same script)."""
    u = f"unicode/{label}"
    m = _markup(label, text)
    first = text.split()[0]
    words = text.split()
    if iid in COUNTS:
        fmt = {
            "detectable_format:number_bullet_lists": m["bullets"],
            "length_constraints:number_paragraphs": m["dividers"],
            "detectable_content:number_placeholders": m["placeholders"],
            "detectable_format:number_highlighted_sections": m["highlights"],
        }
        return _threshold(iid, text, label) + (_threshold(iid, fmt[iid], label + "/markup") if iid in fmt else [])
    if iid == "keywords:existence":
        return [Case(iid, {"keywords": [k]}, text, f"{u}/keyword {k!r}") for k in KEYWORDS.get(label, [first])]
    if iid == "keywords:frequency":
        return [
            Case(iid, {"keyword": k, "frequency": f, "relation": r}, text, f"{u}/keyword {k!r} {r} {f}")
            for k in KEYWORDS.get(label, [first])
            for f, r in ((1, "at least"), (2, "less than"), (0, "at least"))
        ]
    if iid == "keywords:forbidden_words":
        return [
            Case(iid, {"forbidden_words": [w]}, text, f"{u}/forbidden {w!r}")
            for w in KEYWORDS.get(label, [first]) + [words[-1].strip(".!?।")]
        ]
    if iid == "keywords:letter_frequency":
        return [
            Case(iid, {"letter": x, "let_frequency": f, "let_relation": r}, text, f"{u}/letter {x} {r} {f}")
            for x in "ie"
            for f, r in ((2, "at least"), (0, "at least"), (3, "less than"))
        ]
    if iid == "language:response_language":
        return [Case(iid, {"language": lang}, text, f"{u}/language {lang}") for lang in (LANGS.get(label, "en"), "en")]
    if iid == "length_constraints:nth_paragraph_first_word":
        para = PARAGRAPHS[label]
        w = C.first_word(para.split("\n\n")[1]) or "x"
        return [
            Case(
                iid,
                {"num_paragraphs": n, "nth_paragraph": k, "first_word": fw},
                para,
                f"{u}/paragraph {k} of {n} starts with {fw!r}",
            )
            for n, k, fw in ((3, 2, w), (3, 1, first), (3, 2, NFD(w)), (2, 2, w), (3, 3, w.upper()))
        ]
    if iid == "detectable_content:postscript":
        space = SPACE_OF.get(label, " ")
        marker = MARKERS.get(label, "P.S.")
        return [
            Case(iid, {"postscript_marker": mk}, f"{text}\n{prefix}{space}{words[-1]}", f"{u}/marker {mk!r}")
            for mk, prefix in ((marker, marker), ("P.S.", "P.S."), ("P.P.S", "p. p. s"), (marker, NFD(marker)))
        ]
    if iid == "detectable_format:multiple_sections":
        s = SPLITTERS.get(label, "Section")
        space = SPACE_OF.get(label, " ")
        digits = DIGITS.get(label, "12")
        body = f"{s}{space}{digits[0]}\n{words[0]}\n{s}{space}{digits[1]}\n{words[-1]}"
        return [
            Case(iid, {"section_spliter": sp, "num_sections": n}, body, f"{u}/splitter {sp!r} >= {n}")
            for sp, n in ((s, 2), (s, 3), (s.lower(), 2), (NFD(s), 2), (s, 0))
        ]
    if iid == "detectable_format:json_format":
        return [Case(iid, {}, m["json"], f"{u}/json"), Case(iid, {}, text, f"{u}/text")]
    if iid == "detectable_format:title":
        return [
            Case(iid, {}, m["title"], f"{u}/title"),
            Case(iid, {}, f"<<{SPACE_OF.get(label, ' ')}>> {text}", f"{u}/blank title"),
        ]
    if iid == "combination:two_responses":
        return [Case(iid, {}, m["two"], f"{u}/two"), Case(iid, {}, f"{text}\n******\n{NFD(text)}", f"{u}/nfd twin")]
    if iid == "combination:repeat_prompt":
        return [
            Case(iid, {"prompt_to_repeat": p}, f"{text} {first}", f"{u}/repeat {i}")
            for i, p in enumerate((text.split(".")[0], NFD(text.split(".")[0]), text.upper()[:20]))
        ]
    if iid == "startend:end_checker":
        end = " ".join(words[-2:])
        return [
            Case(iid, {"end_phrase": p}, text, f"{u}/end {i}")
            for i, p in enumerate((end, NFD(end), end.upper(), words[-1].rstrip(".!?।")))
        ]
    if iid == "detectable_format:constrained_response":
        return [
            Case(iid, {}, f"{text} My answer is{SPACE_OF.get(label, ' ')}yes.", f"{u}/answer"),
            Case(iid, {}, f"My answer is maybe. {text}", f"{u}/answer first"),
        ]
    if iid == "punctuation:no_comma":
        return [
            Case(iid, {}, text, f"{u}/text"),
            Case(iid, {}, text.replace(",", "،"), f"{u}/arabic comma"),
            Case(iid, {}, text.replace(",", "，").replace(".", "、"), f"{u}/fullwidth"),
        ]
    if iid == "startend:quotation":
        return [
            Case(iid, {}, f'"{text}"', f"{u}/quoted"),
            Case(iid, {}, f"\u201c{text}\u201d", f"{u}/curly"),
            Case(iid, {}, f'{SPACE_OF.get(label, " ")}"{text}"\u00a0', f"{u}/spaced"),
        ]
    if iid in ("change_case:english_capital", "change_case:english_lowercase"):
        return [
            Case(iid, {}, t, f"{u}/{name}")
            for name, t in (("upper", text.upper()), ("lower", text.lower()), ("as is", text))
        ]
    raise KeyError(iid)


def block() -> list[Case]:
    """The multilingual and Unicode cases of every official instruction id (deterministic)."""
    from mrtpo_viz.tasks.ifeval.instructions import OFFICIAL_IDS

    return [c for iid in sorted(OFFICIAL_IDS) for label, text in TEXTS.items() for c in _by_text(iid, label, text)]

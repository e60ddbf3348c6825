"""Hand-written edge cases per official IFEval instruction: ``id -> [(kwargs, response), ...]``.

Each list mixes passing ("valid") and failing responses around the checker's edges; :mod:`ifeval_adversarial` adds
seeded mutations (CRLF, blank lines, markdown, unicode, loose-mode wrappers) and fuzz on top.
"""

from __future__ import annotations

LONG_EN = (
    "The quick brown fox jumps over the lazy dog near the river bank. It was a sunny day and everyone "
    "was happy to be outside in the warm weather."
)
FR = "Le renard brun rapide saute par-dessus le chien paresseux pres de la riviere. Il faisait beau."
UP_EN = LONG_EN.upper()
LOW_EN = LONG_EN.lower()


def words_cases():
    out = []
    for n, rel, text in [
        (5, "at least", "one two three four five"),
        (5, "at least", "one two three four"),
        (5, "less than", "one two three four"),
        (5, "less than", "one two three four five"),
        (3, "at least", "don't stop"),
        (3, "at least", "co-op e-mail"),
        (2, "at least", "a_b c"),
        (3, "at least", "caf\u00e9 na\u00efve \u65e5\u672c\u8a9e"),
        (4, "at least", "1 2 3.5"),
        (2, "less than", "\U0001f600 \U0001f600 word"),
        (3, "at least", "**bold** *x* y"),
        (2, "at least", "line1\r\nline2"),
        (1, "at least", "   \t  "),
    ]:
        out.append(({"num_words": n, "relation": rel}, text))
    return out


def sentences_cases():
    k = lambda n, r="at least": {"num_sentences": n, "relation": r}
    return [
        (k(2), "Dr. Smith went home. He slept."),
        (k(3), "Dr. Smith went home. He slept."),
        (k(2), "I live in the U.S.A. The weather is nice."),
        (k(2, "less than"), "I live in the U.S.A. now."),
        (k(3), "Wait... what? Really!"),
        (k(2), 'He said "Stop." Then he left.'),
        (k(3), "1. First item.\n2. Second item.\n3. Third item."),
        (k(2), "J. S. Bach wrote music. Nice."),
        (k(2), "e.g. this one. And i.e. that one."),
        (k(2), "Hello!!! How are you??"),
        (k(1, "less than"), "no terminal punctuation here"),
        (k(2), "One.\r\nTwo.\r\n"),
        (k(2), "\u201cQuoted.\u201d Next one."),
        (k(2), "Price is 3.50 dollars. Cheap."),
        (k(4), "Mr. and Mrs. Jones arrived at 5 p.m. They ate. It was late."),
        (k(2), "* bullet one.\n* bullet two."),
        (k(2), "Visit example.com. It is good."),
        (k(2), "(Parenthetical.) Another."),
        (k(3), "A. B. C."),
        (k(20, "less than"), LONG_EN),
    ]


def paragraphs_cases():
    k = lambda n: {"num_paragraphs": n}
    return [
        (k(2), "First.\n***\nSecond."),
        (k(2), "First.\r\n***\r\nSecond."),
        (k(3), "A\n***\nB\n***\nC"),
        (k(2), "***\nA\n***\nB\n***"),
        (k(2), "A\n***\n\n***\nB"),
        (k(2), "A *** B"),
        (k(2), "A****B"),
        (k(1), "Just one paragraph."),
        (k(2), "A\n\n***\n\nB"),
        (k(2), "A\n* * *\nB"),
        (k(3), "A\n***\nB\n*** \nC"),
        (k(2), "A\n\n\nB"),
        (k(2), "A\n------\nB"),
        (k(1), "***"),
    ]


def nth_first_word_cases():
    k = lambda n, nth, w: {"num_paragraphs": n, "nth_paragraph": nth, "first_word": w}
    return [
        (k(2, 2, "hello"), "Intro here.\n\nHello world."),
        (k(2, 2, "hello"), "Intro here.\r\n\r\nHello world."),
        (k(2, 1, "intro"), '"Intro," she said.\n\nMore.'),
        (k(2, 2, "hello"), "A\n\n\n\nHello there"),
        (k(3, 2, "bye"), "A\n\nBye.\n\nC"),
        (k(2, 2, "it"), "A\n\n'It's fine'"),
        (k(2, 2, "x"), "A\n\n   \n\nx"),
        (k(1, 1, "sure"), "Sure! Here it is."),
        (k(2, 2, "hello"), "A\n\n**Hello** world"),
        (k(2, 2, "caf\u00e9"), "A\n\nCaf\u00e9 time"),
        (k(2, 2, "hello"), "A\n \nHello"),
        (k(3, 3, "end"), "A\n\nB\n\nEnd."),
    ]


def keyword_cases():
    k = lambda w, n, r="at least": {"keyword": w, "frequency": n, "relation": r}
    return [
        (k("cat", 2), "Cat and CAT."),
        (k("cat", 2), "category catalog"),
        (k("cat", 2, "less than"), "one cat"),
        (k(" dog ", 1), "Dogs everywhere"),
        (k("na\u00efve", 1), "NA\u00cfVE approach"),
        (k("u.s", 1), "the US is big"),
        (k("ai", 3), "AI ai Ai said"),
        (k("x", 1, "less than"), "no match"),
    ]


def existence_cases():
    k = lambda *ws: {"keywords": list(ws)}
    return [
        (k("apple", "Banana"), "I like APPLE and banana."),
        (k("apple", "pear"), "apple only"),
        (k("new york"), "New York City"),
        (k("e.g"), "for example"),
        (k("\u00e9t\u00e9"), "\u00c9T\u00c9 chaud"),
        (k("ice"), "price"),
        (k("a", "b", "c"), "abc"),
    ]


def forbidden_cases():
    k = lambda *ws: {"forbidden_words": list(ws)}
    return [
        (k("very"), "This is VERY good."),
        (k("very"), "everything is fine"),
        (k("very"), "very-good"),
        (k("good", "bad"), "It was good_enough"),
        (k("don"), "don't"),
        (k("caf\u00e9"), "Caf\u00e9s"),
        (k("new york"), "new  york"),
        (k("very", "very"), "nothing"),
    ]


def letter_cases():
    k = lambda letter, n, r="at least": {"letter": letter, "let_frequency": n, "let_relation": r}
    return [
        (k("a", 3), "banana"),
        (k("a", 4), "banana"),
        (k("A", 3), "AAa"),
        (k("z", 2, "less than"), "zz"),
        (k("i", 1), "\u0130stanbul"),
        (k("e", 2), "caf\u00e9 e"),
        (k("s", 1), "stra\u00dfe".upper()),
        (k("k", 1), "\u212a"),
    ]


def language_cases():
    k = lambda c: {"language": c}
    return [
        (k("en"), LONG_EN),
        (k("fr"), FR),
        (k("en"), FR),
        (k("de"), "Das ist ein kleiner Test auf Deutsch."),
        (k("es"), "Hola, \u00bfc\u00f3mo est\u00e1s? Muy bien, gracias."),
        (k("en"), "12345 !!!"),
        (k("ja"), "\u3053\u308c\u306f\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3067\u3059\u3002"),
        (k("en"), "ok"),
    ]


def placeholder_cases():
    k = lambda n: {"num_placeholders": n}
    return [
        (k(2), "Dear [name], at [address]."),
        (k(2), "[a][b]"),
        (k(1), "[]"),
        (k(2), "[multi\nline]"),
        (k(1), "[[nested]]"),
        (k(3), "[x] [y]"),
        (k(1), "(not) {brackets}"),
        (k(1), "\uff3bfull\uff3d"),
    ]


def postscript_cases():
    k = lambda m: {"postscript_marker": m}
    return [
        (k("P.S."), "Body.\n\nP.S. see you"),
        (k("P.S."), "Body.\np.s. lower"),
        (k("P.S."), "Body. P.S. inline"),
        (k("P.S."), "Body.\nP. S. spaced"),
        (k("P.S."), "Body.\nPS no dots"),
        (k("P.P.S"), "Body\nP.P.S more"),
        (k("P.P.S"), "Body\np. p. s tail"),
        (k("P.S."), "help.s. tricky"),
        (k("P.S."), "Body\r\nP.S. crlf\r\n"),
        (k("Note:"), "Body\nNOTE: hi"),
        (k("P.S."), "**P.S.** bold"),
        (k("P.P.S"), "Body\nP.S. only"),
    ]


def bullet_cases():
    k = lambda n: {"num_bullets": n}
    return [
        (k(2), "* one\n* two"),
        (k(2), "- one\n- two"),
        (k(2), "* one\n- two"),
        (k(2), "** bold\n* one\n* two"),
        (k(1), "*italic* line"),
        (k(3), "* a\n\n* b\n\n* c"),
        (k(2), "  * indented\n\t- tab"),
        (k(1), "---"),
        (k(2), "* one\r\n* two\r\n"),
        (k(1), "1. numbered\n2. list"),
        (k(1), "\u2022 unicode"),
        (k(2), "*\n* a"),
        (k(1), "-5 degrees"),
        (k(2), "* a\n * b\n  * c"),
    ]


def constrained_cases():
    return [
        ({}, "My answer is yes."),
        ({}, "my answer is yes."),
        ({}, "I think... My answer is maybe. Really"),
        ({}, "My answer is no"),
        ({}, "My answer is  no."),
        ({}, "**My answer is no.**"),
    ]


def highlight_cases():
    k = lambda n: {"num_highlights": n}
    return [
        (k(2), "*one* and *two*"),
        (k(2), "**bold** text"),
        (k(1), "* *"),
        (k(1), "** **"),
        (k(2), "*a\nb*"),
        (k(3), "***x***"),
        (k(1), "a * b * c"),
        (k(2), "*one* **two**"),
        (k(1), "**"),
    ]


def section_cases():
    k = lambda s, n: {"section_spliter": s, "num_sections": n}
    return [
        (k("Section", 2), "Section 1\nA\nSection 2\nB"),
        (k("SECTION", 2), "Section 1\nA\nSection 2\nB"),
        (k("Section", 2), "Section1 A Section2 B"),
        (k("Section", 3), "Section 1\nA\nSection 2\nB"),
        (k("Section", 1), "Sections 3 of"),
        (k(" PART ", 2), "PART 1 x PART 2 y"),
        (k("Section", 2), "Section 1\r\nA\r\nSection 2\r\nB"),
        (k("Section", 1), "Section X"),
    ]


def json_cases():
    return [
        ({}, '{"a": 1}'),
        ({}, '```json\n{"a": 1}\n```'),
        ({}, "```JSON\n[1, 2]\n```"),
        ({}, "42"),
        ({}, '"just a string"'),
        ({}, '{"a": 1,}'),
        ({}, 'Here it is: {"a": 1}'),
        ({}, '```\n{"a": 1}\n```'),
        ({}, '```json\r\n{"a": 1}\r\n```'),
        ({}, "NaN"),
        ({}, '{"a": "caf\u00e9"}'),
        ({}, "```json```"),
        ({}, '```python\n{"a": 1}\n```'),
        ({}, '```json {"a": 1} ``` trailing'),
    ]


def title_cases():
    return [
        ({}, "<<My Title>>\nBody"),
        ({}, "<< >>"),
        ({}, "<<>>"),
        ({}, "<<a\nb>>"),
        ({}, "<<<x>>>"),
        ({}, "<<<>>>"),
        ({}, "<<a>> and <<b>>"),
        ({}, "\u00ab\u00abguillemets\u00bb\u00bb"),
        ({}, "<<\u65e5>>"),
    ]


def two_responses_cases():
    return [
        ({}, "A\n******\nB"),
        ({}, "A\n******\nA"),
        ({}, "A\n******\n******\nB"),
        ({}, "******\nA\n******\nB"),
        ({}, "A\n*******\nB"),
        ({}, "A ****** B ****** C"),
        ({}, "A\r\n******\r\nB\r\n"),
        ({}, "A *** B"),
    ]


def repeat_cases():
    k = lambda p: {"prompt_to_repeat": p}
    p = "Write a poem about cats."
    return [
        (k(p), p + " Here is the poem."),
        (k(p), "  " + p.upper() + "\nOK"),
        (k(p), "Sure! " + p),
        (k(p), p[:-1]),
        (k(" " + p + " "), p + " fine"),
        (k(p), '"' + p + '"'),
    ]


def end_cases():
    k = lambda p: {"end_phrase": p}
    p = "Any other questions?"
    return [
        (k(p), "Body. Any other questions?"),
        (k(p), "Body. any other QUESTIONS?"),
        (k(p), 'Body. "Any other questions?"'),
        (k(p), "Body. Any other questions?\n\n"),
        (k(p), "Body. Any other questions?!"),
        (k(p), "Body. Any other questions? \u201d"),
        (k(p), "Body. Any other questions?\r\n"),
        (k(p), "Any other questions? Body."),
        (k(" " + p), "x " + p),
        (k(p), "**Any other questions?**"),
    ]


def capital_words_cases():
    k = lambda n, r="at least": {"capital_frequency": n, "capital_relation": r}
    return [
        (k(2), "HELLO WORLD"),
        (k(3), "I DON'T KNOW"),
        (k(2), "I'm fine, I think"),
        (k(2), "AT&T and IBM"),
        (k(2, "less than"), "USA"),
        (k(1), "U.S.A. rocks"),
        (k(2), "CANNOT stop"),
        (k(1), "\u00c9COLE"),
        (k(2), "HELLO-WORLD"),
        (k(2), "A,B"),
        (k(1), "123 456"),
        (k(3), "WE'RE GONNA WIN"),
        (k(1), "\u201cQUOTE\u201d"),
        (k(2), "NASA\u2019S rocket"),
    ]


def capital_cases():
    return [
        ({}, UP_EN),
        ({}, LOW_EN),
        ({}, UP_EN + " ok"),
        ({}, "HELLO 123"),
        ({}, "123 456"),
        ({}, "LE RENARD BRUN RAPIDE SAUTE PAR-DESSUS LE CHIEN PARESSEUX."),
        ({}, "\u01c5A"),
        ({}, "STRASSE \u00df"),
        ({}, "THIS IS FINE.\nHERE IS MORE TEXT IN ENGLISH FOR THE DETECTOR."),
    ]


def lowercase_cases():
    return [
        ({}, LOW_EN),
        ({}, UP_EN),
        ({}, LOW_EN + " I"),
        ({}, "hello 123"),
        ({}, "123 456"),
        ({}, "le renard brun rapide saute par-dessus le chien paresseux."),
        ({}, "stra\u00dfe is a word here"),
        ({}, "caf\u00e9 \u01c6 ok"),
        ({}, "Sure!\n" + LOW_EN),
    ]


def comma_cases():
    return [
        ({}, "No commas here."),
        ({}, "One, two."),
        ({}, "Fullwidth\uff0ccomma"),
        ({}, "Arabic\u060c comma"),
        ({}, "1,000"),
        ({}, "Ideographic\u3001comma"),
        ({}, "Sure, here:\nno commas"),
    ]


def quotation_cases():
    return [
        ({}, '"Quoted."'),
        ({}, ' "Quoted." \n'),
        ({}, '"'),
        ({}, '""'),
        ({}, "\u201cCurly\u201d"),
        ({}, '"Open only'),
        ({}, "'single'"),
        ({}, '"a" b "c"'),
        ({}, '"line1\r\nline2"'),
    ]


BASES = {
    "length_constraints:number_words": words_cases,
    "length_constraints:number_sentences": sentences_cases,
    "length_constraints:number_paragraphs": paragraphs_cases,
    "length_constraints:nth_paragraph_first_word": nth_first_word_cases,
    "keywords:frequency": keyword_cases,
    "keywords:existence": existence_cases,
    "keywords:forbidden_words": forbidden_cases,
    "keywords:letter_frequency": letter_cases,
    "language:response_language": language_cases,
    "detectable_content:number_placeholders": placeholder_cases,
    "detectable_content:postscript": postscript_cases,
    "detectable_format:number_bullet_lists": bullet_cases,
    "detectable_format:constrained_response": constrained_cases,
    "detectable_format:number_highlighted_sections": highlight_cases,
    "detectable_format:multiple_sections": section_cases,
    "detectable_format:json_format": json_cases,
    "detectable_format:title": title_cases,
    "combination:two_responses": two_responses_cases,
    "combination:repeat_prompt": repeat_cases,
    "startend:end_checker": end_cases,
    "change_case:capital_word_frequency": capital_words_cases,
    "change_case:english_capital": capital_cases,
    "change_case:english_lowercase": lowercase_cases,
    "punctuation:no_comma": comma_cases,
    "startend:quotation": quotation_cases,
}
"""Official id -> builder of its hand-written (kwargs, response) cases."""

"""Explicit cues: the only way text becomes a memory item.

``rules`` holds the versioned rule table and its labelled examples, ``sentences``
splits a message into the sentences a person said, ``keys`` finds the subject of a
key–value statement, ``words`` the content words that tie a correction to its item,
``analysis`` turns sentences into candidates and ``doc`` renders the rule reference
of ``docs/extraction.md`` (``python -m memplug.derive.cues``).
"""

from memplug.derive.cues.analysis import Candidate, analyse, analysed, classify
from memplug.derive.cues.doc import DOC_BEGIN, DOC_END, render_rules_markdown
from memplug.derive.cues.keys import subject_key
from memplug.derive.cues.rules import ALL_RULES, MODIFIERS, RULES_BY_ID, TASK_FIELDS, all_examples
from memplug.derive.cues.sentences import split_sentences
from memplug.derive.cues.words import canonical, content_words

# The names the extractor, the benchmarks and the tests use.
__all__ = [
    "ALL_RULES",
    "DOC_BEGIN",
    "DOC_END",
    "MODIFIERS",
    "RULES_BY_ID",
    "TASK_FIELDS",
    "Candidate",
    "all_examples",
    "analyse",
    "analysed",
    "canonical",
    "classify",
    "content_words",
    "render_rules_markdown",
    "split_sentences",
    "subject_key",
]

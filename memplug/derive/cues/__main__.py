"""``python -m memplug.derive.cues``: print the rule reference for ``docs/extraction.md``."""

import sys

from memplug.derive.cues.doc import render_rules_markdown

sys.stdout.write(render_rules_markdown() + "\n")

"""``python -m memplug.cues``: print the rule reference for ``docs/extraction.md``."""

import sys

from memplug.cues.doc import render_rules_markdown

sys.stdout.write(render_rules_markdown() + "\n")

"""The cue rules read only where an agent is listening (``contexts=("agent",)``).

Choices, standing rules, option picks, anchored facts and preferences said to a coding
agent; in chat the same words are chatter. ``rules.RULES`` holds them in place, after
the inline cues.
"""

from __future__ import annotations

from memplug.derive.cues.rule_model import _STATIVE, Example, Rule, _agent, _chat, _ex, _rx

# Fillers before a choice said to an agent: "ok, fine, let's do vite", "yes please, …".
_FILL = (
    r"^(?:(?:ok(?:ay)?|fine|yes|yeah|yep|yup|sure|alright|all\s+right|right|cool|great|good|"
    r"so|and|then|well|hmm+|i\s+think|maybe|please|now|oh|ah|actually|instead)[,.!\s]+)*"
)
# A choice's object that names nothing ("let's use it", "we'll go with that").
_PRONOUN = (
    r"(?:it|this|that|these|those|them|some|so|what|both|one|another|something|anything|"
    r"everything|same|all)\b"
)
# After "let's make it": a state the work is to reach now, not a property it is to keep.
_NOT_A_PROPERTY = (
    r"(?:work|pass|happen|run|compile|build|go|so|better|faster|simpler|cleaner|easier|more|"
    r"less|right|nicer|prettier|quick|quicker|shorter|smaller|stop|clear)\b"
)
# After `do`, anything but a bare name is a task ("let's do the implementation", "let's
# do a quick pass"); "let's do vite" names a choice.
_VAGUE_OBJECT = _PRONOUN + r"|(?:the|a|an|more|our|my|your|his|her|their)\b"
# What may open a reply that picks an option ("ok, B", "yes, the second one").
_PICK_FILL = (
    r"^(?:(?:ok(?:ay)?|yes|yeah|yep|yup|sure|fine|alright|hmm+|so|then|actually|no)[,.!\s]+)*"
)

# fmt: off
AGENT_RULES: tuple[Rule, ...] = (
    # -- said to a coding agent ---------------------------------------------------------------
    # People do not label what they tell an agent: "let's do vite", "we explicitly don't
    # want hardcoded visual tests", "A". These rules read only where an agent is listening
    # (a coding host's event, a session with tool calls): in chat the same words are
    # chatter. A task for now ("let's fix the test", "let's push") names no choice verb.
    Rule("en.decision.lets", 1, "decision", "en",
         "Said to an agent: `let's use X` / `let's go with X` / `let's go for X` / `let's"
         " stick with X` / `let's switch to X` / `let's drop X` / `let's not have X` / `let's"
         " do X` / `let's make it <a property>` opening a sentence, X naming something"
         " (`let's do it`, `let's do the implementation`, `let's make it work`, `let's fix"
         " the test`, `let's push` are tasks, not choices).",
         _rx(_FILL + r"(?P<keep>let(?:'|’)?s|let\s+us)\s+(?:(?:just|all|now|then|definitely)\s+)?"
             r"(?:(?:use|go\s+(?:with|for)|stick\s+with|switch\s+to|standardi[sz]e\s+on|drop|"
             r"not\s+(?:have|use|add|support|keep|include|ship|expose|store))\s+(?!" + _PRONOUN
             + r")|do\s+(?!" + _VAGUE_OBJECT + r")|make\s+it\s+(?!" + _NOT_A_PROPERTY + r"))"
             r"(?=[\w`'\"])"),
         _agent(("ok, fine, let's do vite", "decision"),
                ("Let's use PostgreSQL 16 for the orders service.", "decision"),
                ("yeah let's go for date on every line", "decision"),
                ("Let's do it in 91 - I want to merge 90 now", None),
                ("yeah let's push and re-test", None),
                ("Yes, let's fix the gaps.", None),
                ("yeah so maybe let's not have CONDENSE looking like a state in the plan",
                 "decision"),
                ("if it's compatible then let's not spend too much time on it", None),
                ("Lets do the implementation too", None),
                ("yes please, and let's make it cross-browser", "decision"),
                ("let's make it work first", None),
                ("- let's drop the '-' before each commit", "decision"))
         + _chat("Let's go for a walk after lunch."),
         priority=25, contexts=("agent",),
         triggers=("let",)),
    Rule("en.decision.we_use", 1, "decision", "en",
         "Said to an agent: `we'll use X` / `we're going to use X` / `we'll go with X` /"
         " `we're going with X` / `we're getting rid of X` / `we do X-first` (not after `if`,"
         " `when`, `how`, …; a plain `we use X` describes the code, it chooses nothing).",
         _rx(r"\bwe(?:'ll|\s+will|'re\s+going\s+to|\s+are\s+going\s+to)\s+"
             r"(?:use|go\s+with|stick\s+with|switch\s+to)\s+(?!" + _PRONOUN + r")(?=[\w`'\"])"
             r"|\bwe(?:'re|\s+are)\s+(?:going\s+with|getting\s+rid\s+of|dropping|ditching|"
             r"sticking\s+with|switching\s+to)\s+(?!" + _PRONOUN + r")(?=[\w`'\"])"
             r"|\bwe\s+do\s+[\w-]+-first\b"),
         _agent(("We'll use Redis for the session cache.", "decision"),
                ("we do container-first.", "decision"),
                ("okay, so it sounds like we're getting rid of TTL.", "decision"),
                ("If we use Redis, the tests get slower.", None),
                ("We use `parse_header()` to read the trailer.", None),
                ("We use it everywhere.", None))
         + _chat("We'll use the big tent for the party."),
         priority=25, contexts=("agent",),
         not_before=_rx(r"\b(?:if|whether|when|how|what|which|that|where|because|since|do|can|"
                        r"could|should|would|might|and|once|until|unless)\s+$"),
         triggers=("we",)),
    Rule("en.decision.switch", 1, "decision", "en",
         "Said to an agent: `switch (X) to Y` / `migrate (X) to Y` opening a sentence: a"
         " choice that replaces what X was (with `Actually,` or `instead` it supersedes it).",
         _rx(_FILL + r"(?P<keep>switch|migrate)\s+(?:(?!to\b)[^\s,.;?]+\s+){0,6}?to\s+"
             r"(?!(?:it|this|that|there|here)\b)(?=[\w`'\"])"),
         _agent(("Actually, switch the orders service to MySQL 8 instead.", "decision"),
                ("Switch the CI to Node 20.", "decision"),
                ("Switch to it.", None),
                ("oh whoops, accidentally switched branches, my bad", None))
         + _chat("Switch the lights to the warm setting."),
         priority=25, contexts=("agent",),
         triggers=("switch", "migrate")),
    Rule("en.decision.use_instead", 1, "decision", "en",
         "Said to an agent: `use X instead (of Y)` / `go with X instead` opening a sentence:"
         " a choice that replaces another (without `instead`, `use the debugger` is a task).",
         _rx(_FILL + r"(?P<keep>(?:use|go\s+with|pick|choose)\s+(?!" + _PRONOUN + r"))"
             r"(?=[^.;!?]*\binstead\b)"),
         _agent(("Use uv instead of pip-tools.", "decision"),
                ("ok, use the builtin subagent teams instead.", "decision"),
                ("Use the debugger to find it.", None),
                ("Use it instead.", "correction"))
         + _ex(("Use butter instead of oil.", "correction")),
         priority=25, contexts=("agent",),
         triggers=("instead",)),
    Rule("en.decision.proceed", 1, "decision", "en",
         "Said to an agent: `proceed with X` / `go ahead with X` opening a sentence, X naming"
         " a choice (`proceed with this plan`, `go ahead with the implementation` are tasks).",
         _rx(_FILL + r"(?P<keep>(?:let(?:'|’)?s\s+)?(?:proceed|go\s+ahead)\s+with)\s+"
             r"(?!" + _PRONOUN + r"|the\s+(?:plan|implementation|changes?|fix|next|rest|above|"
             r"task)\b|implementation|implementing|fixing|fix)(?=[\w`'\"])"),
         _agent(("Proceed with Redis for the session cache.", "decision"),
                ("OK, proceed with Redis.", "decision"),
                ("Proceed with the implementation.", None),
                ("then proceed with this new plan", None))
         + _chat("Proceed with caution on the icy road."),
         priority=25, contexts=("agent",),
         triggers=("proceed", "ahead")),
    Rule("en.decision.on_purpose", 1, "decision", "en",
         "Said to an agent: `we <did> X on purpose` / `deliberately` / `intentionally`: a"
         " choice that was made, kept so that nobody undoes it.",
         _rx(r"\bwe(?:'ve|\s+have)?\s+(?:\w+\s+){0,8}?(?:on\s+purpose|deliberately|"
             r"intentionally)\b"),
         _agent(("no, we removed the session commands on purpose", "decision"),
                ("We deliberately keep the v1 endpoint for mobile clients.", "decision"),
                ("I didn't do it on purpose.", None),
                ("Did we remove it on purpose?", None))
         + _chat("We left the door open on purpose."),
         priority=25, contexts=("agent",),
         triggers=("we",)),
    Rule("en.decision.i_want", 1, "decision", "en",
         "Said to an agent: `I want X to …` / `I'd like X to …` where X names a thing (`I"
         " want to …` and `I want you to …` are requests for now).",
         _rx(r"\bi\s+(?:want|'d\s+like|would\s+like)\s+(?!(?:to|you|it|this|that|them|some|"
             r"more|better|something|everything|anything|us|me)\b)(?:[\w`'\"./-]+\s+){1,5}?to\s+"
             r"(?!(?:be\s+(?:able|sure|clear)|know|see|understand|check|look|try|ask)\b)"),
         _agent(("I want the review to run on every push.", "decision"),
                ("I want to merge 90 now.", None),
                ("I want you to fix the test.", None),
                ("I'd like it to do B.", None))
         + _chat("I want the kids to have fun at the party."),
         priority=45, contexts=("agent",),
         triggers=("want",)),
    Rule("en.decision.option_pick", 3, "decision", "en",
         "Said to an agent: a reply that picks one of the options the assistant's previous"
         " message offered, one a line or inline (`Option 1: … . Option 2: … .`): `A`, `B)`,"
         " `option 2`, `yes, version B`, `let's do 2`, `go with the second`, or a reply that"
         " is only `the second one`. The item is the chosen option's text, its sources both"
         " messages. A pick of an option that was not offered is nothing, and so is an"
         " answer to a lettered question (`A) Which format? B) Where?`: a line that asks is"
         " no option).",
         _rx(r"(?:" + _PICK_FILL +
             r"|\b(?:go(?:ing)?\s+(?:with|for)|do|pick|choose|take|prefer)\s+)"
             r"(?:the\s+)?(?:(?:option|approach|choice|variant|version|number)\s+)?#?\s*"
             r"(?P<pick>(?-i:[A-H])|[1-9])(?=[).:,;!]|\s*$|\s+(?:for\s+now|please|then|first|"
             r"and|but|now|instead|it\s+is)\b)"
             r"|(?:\b(?:go(?:ing)?\s+(?:with|for)|do|pick|choose|take|prefer)\s+|" + _PICK_FILL
             + r"(?=the\s+\w+(?:\s+(?:one|option|approach))?(?:\s+please)?\s*[.!]?\s*$))the\s+"
             r"(?P<nth>first|second|third|fourth|last)\b(?:\s+(?:one|option|approach))?"),
         (Example("A", "decision", agent=True,
                  offered="Which one?\n\nA) Poll every 30 s\nB) Push from a webhook"),
          Example("let's do 2 for now", "decision", agent=True,
                  offered="1. **Do it now** - refactor\n2. **Quick fix** - duplicate the"
                          " helper\n3. **Separate branch** - park it"),
          Example("yes, version B", "decision", agent=True,
                  offered="Version A: keep the cron job\nVersion B: use a queue"),
          Example("go with the second", "decision", agent=True,
                  offered="Option A: keep the cron job\nOption B: use a queue"),
          Example("let's do 2 for now, can you file the follow-up?", "decision", agent=True,
                  offered="1. Do it now\n2. Quick fix\n3. Separate branch"),
          Example("the second one", "decision", agent=True,
                  offered="Option 1: keep the cron job. Option 2: use a queue. Which one?"),
          Example("option 2", "decision", agent=True,
                  offered="Two ways: Option 1: keep the cron job. Option 2: use a queue."),
          Example("the second one is broken", None, agent=True,
                  offered="Option 1: keep the cron job. Option 2: use a queue."),
          Example("B?", None, agent=True, offered="A) Poll every 30 s\nB) Push from a webhook"),
          Example("A) json, B) keep it in the repo", None, agent=True,
                  offered="Two questions:\nA) Which format should it use?\nB) Where should it"
                          " live?"),
          Example("A", None, agent=True, offered="Does this match your intuition?"),
          Example("A", None, offered="A) Poll every 30 s\nB) Push from a webhook"),
          Example("Plan A is fine by me.", None, agent=True,
                  offered="A) Poll every 30 s\nB) Push from a webhook")),
         priority=1, contexts=("agent",)),
    Rule("en.constraint.from_now_on", 1, "constraint", "en",
         "Said to an agent: a sentence that opens with `From now on` / `Going forward` /"
         " `Moving forward` / `From here on`: a standing rule.",
         _rx(_FILL + r"(?:from\s+now\s+on|going\s+forward|moving\s+forward|"
             r"from\s+here\s+on(?:\s+out)?|henceforth)\b[,:]?\s*(?=[\w`'\"])"),
         _agent(("From now on, always run the linter before committing.", "constraint"),
                ("Going forward, every migration gets a down script.", "constraint"),
                ("Going forward.", None),
                ("Moving forward?", None))
         + _chat("From now on, I'm going to the gym every morning."),
         priority=28, contexts=("agent",), not_after=_rx(r"[^.!?]*\bi(?:'m|\s+am|\s+will)\b"),
         triggers=("from now", "forward", "from here", "henceforth")),
    Rule("en.constraint.dont_want", 1, "constraint", "en",
         "Said to an agent: `we (explicitly) don't want …` / `I don't want …` / `we never"
         " want …`: a prohibition with its object kept.",
         _rx(r"\b(?:we|i)\s+(?:(?:really|explicitly|definitely|absolutely|just|also|certainly)\s+)?"
             r"(?:don't|do\s+not|never)\s+want\b"),
         _agent(("we explicitly don't want hardcoded visual tests.", "constraint"),
                ("I don't want to make assumptions about people's env.", "constraint"),
                ("I don't want to know.", None),
                ("If we don't want that, say so.", None))
         + _chat("We don't want to miss the sunset."),
         priority=30, contexts=("agent",),
         not_before=_rx(r"\b(?:if|whether|when|because|since|unless|what|why)\b[^,]*$"),
         not_after=_rx(r"\s+(?:to\s+)?(?:know|see|hear|bother|wait|miss|be\s+rude|that|this|"
                       r"it)\b\s*[.!]?$"),
         triggers=("want",)),
    Rule("en.constraint.should_never", 1, "constraint", "en",
         "Said to an agent: `X should never …` / `X must never …` / `X can never …` with any"
         " subject (`we never`, `you should never` are `en.constraint.never`).",
         _rx(r"\b(?:should|must|shall|can)\s+never\b"),
         _agent(("Card numbers should never reach the logs.", "constraint"),
                ("The migration job should never run twice.", "constraint"),
                ("That should never have happened.", None),
                ("I can never remember the flag.", None))
         + _chat("The kids should never miss breakfast."),
         priority=30, contexts=("agent",),
         not_after=_rx(r"\s+(?:have|be\s+(?:so|too|that)|" + _STATIVE + r"|remember|forget)\b"),
         not_before=_rx(r"\b(?:i|it|that|this|you|he|she|they)\s+$"),
         triggers=("never",)),
    Rule("en.fact.anchor", 1, "fact", "en",
         "Said to an agent: a project fact anchored on something structural: `you can"
         " test/run/build it with `cmd``, `it's at <path or URL>`, `the parent/base/default"
         " branch is X`, `CI runs on Node 20`.",
         _rx(r"\byou\s+can\s+(?:test|run|build|start|check|try|debug|deploy|lint|verify|"
             r"reproduce|find)\b[^.?!]{0,80}?(?:`[^`]+`|'[^'\s]+'|\"[^\"\s]+\")"
             r"|\b(?:it(?:'s|\s+is)|it\s+lives|(?:is|are)\s+(?:located|hosted|deployed|cloned))"
             r"\s+(?:at|in|under|on)\s+`?(?=https?://|git@|~/|/[\w.-]+/|\.\.?/|[\w.-]+/[\w.-])"
             r"|\bthe\s+(?:parent|base|default|main|target|release|upstream)\s+branch\s+is\s+(?=\S)"
             r"|\b(?:ci|the\s+ci|the\s+build|the\s+tests)\s+runs?\s+on\s+(?=[^.?!]*\d)"),
         _agent(("You can test it with `act`.", "fact"),
                ("I cloned it and it's at https://github.com/daaain/online-llm-tokenizer", "fact"),
                ("The parent branch is soph/one-to-one-checkpoints.", "fact"),
                ("CI runs on Node 20.", "fact"),
                ("You can test it yourself.", None),
                ("It's at the top of the file.", None))
         + _chat("You can run 'home' to see the help."),
         priority=55, contexts=("agent",),
         triggers=("you can", "it's", "it is", "it\u2019s", "lives", "located", "hosted",
                   "deployed", "cloned", "branch is", "runs")),
    Rule("en.preference.rather", 1, "preference", "en",
         "Said to an agent: `I'd rather X (than Y)` / `I would rather …` (`I'd rather not`"
         " is no preference of a way of working).",
         _rx(r"\bi(?:'d|\s+would)\s+(?:much\s+|really\s+)?rather\b(?!\s+not\b)"),
         _agent(("I'd rather implement it as computer use tools than playwright tools.",
                 "preference"),
                ("I'd rather not.", None),
                ("Would you rather use Go?", None))
         + _chat("I'd rather stay in tonight and read."),
         priority=40, contexts=("agent",),
         triggers=("rather",)),
)
# fmt: on

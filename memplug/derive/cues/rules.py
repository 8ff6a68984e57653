"""The cue rules: what a sentence must say, word for word, to become a memory item.

A kind is never guessed from tone or topic. Each rule below names an explicit word or
pattern, in English or Chinese, carries a version (stored with every item it creates
as ``extractor``) and its own labelled examples. The examples are the test table
(``tests/test_cues.py``) and the rule list in ``docs/extraction.md`` (rendered by
``python -m memplug.derive.cues``), so documentation, tests and behaviour cannot drift apart.

``RULES`` is the one table, assembled here in its fixed order. The labels, inline cues,
proposals, corrections and retractions are written here; the task-state cues are in
``task_rules``, the rules read only where an agent is listening in ``agent_rules``, and
the ``Rule`` record, its helpers and the shared word lists in ``rule_model``.
"""

from __future__ import annotations

from memplug.derive.cues.agent_rules import AGENT_RULES
from memplug.derive.cues.rule_model import (
    _CHECKABLE,
    _DESCRIPTIVE,
    _ENCOURAGE,
    _FRAME,
    _LEAD,
    _NAMED,
    _NOT_ABOUT_WORK,
    _NOT_CONTRAST,
    _PAST,
    _REVIEW_VERDICT,
    _STATIVE,
    _STORY_JOIN,
    _WORK_NOUNS,
    _WORK_VERBS,
    Example,
    Rule,
    _agent,
    _chat,
    _ex,
    _rx,
)
from memplug.derive.cues.task_rules import TASK_RULES

# Task-state fields a cue can fill; they update ``task_state``, not ``memory_items``.
TASK_FIELDS: tuple[str, ...] = ("goal", "progress", "blocker", "open_item", "unblocked")
# What a sentence can do besides naming a kind.
MODIFIERS: tuple[str, ...] = ("correction", "retraction", "restatement")

# fmt: off
RULES: tuple[Rule, ...] = (
    # -- labels: a person naming the kind outright --------------------------------------
    Rule("en.decision.label", 1, "decision", "en",
         "A sentence that starts with the label `Decision:`.",
         _rx(_LEAD + r"(?:decisions?|decided)\s*[:：]\s*"),
         _ex(("Decision: we ship the checkout rewrite on Friday.", "decision"),
             ("Decisions: Postgres for orders.", "decision"),
             ("That was a tough decision: we argued for hours.", None),
             ("Decision pending until the review.", None),
             ("And now with this new job, I am happy about my decision.", None),
             ("It's a big decision, but I'm excited for what the future holds.", None)),
         strip=True, label=True, priority=10,
         triggers=("decisi", "decided")),
    Rule("zh.decision.label", 1, "decision", "zh",
         "以 `决定：` 或 `决策：` 开头的句子。",
         _rx(r"^(?:决定|决策)\s*[：:]\s*"),
         _ex(("决定：周五发布新版结账流程。", "decision"),
             ("决策：订单表继续用Postgres。", "decision"),
             ("这个决定很难做。", None),
             ("这是我论文的第二部分：", None),
             ("有了这份新工作，我对自己的决定很满意。", None)),
         strip=True, label=True, priority=10,
         triggers=("决",)),
    Rule("en.constraint.label", 1, "constraint", "en",
         "A sentence that starts with `Constraint:`, `Rule:` or `Requirement:`.",
         _rx(_LEAD + r"(?:constraints?|rules?|requirements?)\s*[:：]\s*"),
         _ex(("Constraint: card numbers are never written to logs.", "constraint"),
             ("Rule: one change per commit.", "constraint"),
             ("The rule engine is slow.", None),
             ("I like the 30-day rule idea.", None),
             ("I'm still a bit unclear about the proof of continuous presence requirement.", None)),
         strip=True, label=True, priority=10,
         triggers=("constraint", "rule", "requirement")),
    Rule("zh.constraint.label", 1, "constraint", "zh",
         "以 `约束：`、`规则：` 或 `要求：` 开头的句子。",
         _rx(r"^(?:约束|规则|要求)\s*[：:]\s*"),
         _ex(("约束：日志里不能出现卡号。", "constraint"),
             ("这条规则太严格了。", None),
             ("这是我论文的第二部分：", None),
             ("我还不太清楚连续居住证明的要求。", None)),
         strip=True, label=True, priority=10,
         triggers=("约束", "规则", "要求")),
    Rule("en.preference.label", 1, "preference", "en",
         "A sentence that starts with `Preference:`.",
         _rx(_LEAD + r"(?:my\s+)?preferences?\s*[:：]\s*"),
         _ex(("Preference: short commit messages in the imperative.", "preference"),
             ("Open the preferences pane.", None),
             ("They seem to fit my budget and preferences perfectly.", None),
             ("No specific preferences yet, I'm still open to exploring different options.", None)),
         strip=True, label=True, priority=10,
         triggers=("prefer",)),
    Rule("en.open_question.label", 2, "open_question", "en",
         "A sentence that starts with `Open question:` or `TBD:`.",
         _rx(_LEAD + r"(?:open\s+questions?|tbd)\s*[:：]\s*"),
         _ex(("Open question: do we keep the v1 checkout endpoint for mobile clients?",
              "open_question"),
             ("TBD: who owns the billing migration.", "open_question"),
             ("That's a good question.", None),
             ("Any questions?", None),
             ("Let me know if you have any other questions or need further assistance.", None)),
         strip=True, label=True, priority=10,
         triggers=("question", "tbd")),
    Rule("en.open_question.question_label", 1, "open_question", "en",
         "In chat, a sentence that starts with `Question:`. Said to an agent, `Question: …`"
         " asks the agent something now; it is no open question of the project.",
         _rx(_LEAD + r"questions?\s*[:：]\s*"),
         _ex(("Question: do we need IPv6?", "open_question"))
         + _agent(("Question: doesn't git know if it's a binary file?", None),
                  ("question: the outcome of this was clearly committed in 72a7142", None))
         + _chat("Any questions?"),
         strip=True, label=True, priority=10, contexts=("chat",),
         triggers=("question",)),
    Rule("zh.open_question.label", 1, "open_question", "zh",
         "以 `疑问：`、`待定：`、`未决问题：`、`开放问题：` 或 `待确认：` 开头的句子"
         "（`问题：` 也指故障，所以不算）。",
         _rx(r"^(?:疑问|待定|未决问题|开放问题|待确认)\s*[：:]\s*"),
         _ex(("待定：移动端是否继续用v1接口？", "open_question"),
             ("问题：测试在CI上失败了。", None),
             ("英文文法的問題", None),
             ("應該填那些字比較正確", None)),
         strip=True, label=True, priority=10,
         triggers=("疑问", "待", "问题")),
    Rule("en.proposal.label", 1, "proposal", "en",
         "An assistant sentence that starts with `Proposal:`, `Suggestion:` or"
         " `Recommendation:`.",
         _rx(_LEAD + r"(?:proposals?|suggestions?|recommendations?)\s*[:：]\s*"),
         _ex(("Suggestion: cache the product list for 60 s.", "proposal", "assistant"),
             ("Suggestion: cache the product list for 60 s.", None, "user"),
             ("Here are some recommendations:", None, "assistant"),
             ("**Other Recommendations**", None, "assistant")),
         strip=True, label=True, priority=10, roles=("assistant",),
         triggers=("propos", "suggest", "recommend")),
    *TASK_RULES,  # -- task state (task_rules.py)
    # -- inline cues -----------------------------------------------------------------------
    Rule("en.decision.we_decided", 2, "decision", "en",
         "`we decided` / `we've decided` opening a statement (not after `if`, `whether`,"
         " `and`, `so`, and not in a story told with `last week`, `yesterday`, `ago`)."
         " `I decided` is a personal event, never a decision of the work.",
         _rx(r"\bwe(?:'ve|\s+have)?\s+(?:(?:just|finally|now|already)\s+)?decided\b"),
         _ex(("We decided to use Redis for the session cache.", "decision"),
             ("We've decided on Postgres 16.", "decision"),
             ("We haven't decided yet.", None),
             ("Have we decided on the cache?", None),
             ("If we decided to drop v1, mobile would break.", None),
             ("Last week, I decided to run for office again - even though I haven't been"
              " successful before.", None),
             ("We still had some money left after helping the shelter, and we decided to use"
              " this money to buy groceries.", None),
             ("Samantha and I have decided to move in together!", None),
             ("We went back and forth for a bit, but eventually, I decided to just agree to"
              " disagree and move on.", None)),
         priority=20,
         not_before=_rx(r"\b(?:if|whether|once|when|until|unless|and|so|but|then|which|that|"
                        r"after|because|since)\s+$|\b(?:last\s+(?:week|month|year|night|time)|"
                        r"yesterday|ago)\b"),
         not_after=_rx(r".*\b(?:last\s+(?:week|month|year|night)|yesterday|ago)\b|"
                       + _NOT_ABOUT_WORK),
         triggers=("decided",)),
    Rule("zh.decision.inline", 2, "decision", "zh",
         "`我们决定` / `已经决定` / `最终决定` / `团队决定`（`还没决定`、`由你决定` 不算；"
         "`我决定…` 是个人的事，不是工作上的决定）。",
         _rx(r"(?:我们|已经|最终|最后|大家|团队)决定(?!权|不了|吗)"),
         _ex(("我们决定用Postgres存订单。", "decision"),
             ("我们还没决定用哪个数据库。", None),
             ("这个由你决定。", None),
             ("我决定从下周开始跑步。", None),
             ("上周我决定再去竞选一次。", None)),
         priority=20, not_before=_rx(r"(?:没|未|不|还没有?|你来)$"),
         not_after=_rx(r"了?\s*[。！!.]?$"),
         triggers=("决",)),
    Rule("en.constraint.must", 4, "constraint", "en",
         "`must` / `must not` / `mustn't` with an action or a checkable requirement"
         " (`must keep p95 < 200 ms`, `must be reviewed`, `must be under 2 MB`). Not"
         " epistemic (`it must be scary`, `you must love it`, `must have been`, `must be"
         " so rewarding`), not a gerund's (`seeing them grow must be …`), not `a must`,"
         " not `I must say`; not a review verdict (`Request Changes - …`) nor one named"
         " thing to fix (`the login bug must be fixed`: a task for now). In chat its"
         " subject must be the work (also after `Important:`), or people told to do"
         " something to the work (`you must try the pasta`, `we must visit the museum` are"
         " not cues).",
         _rx(r"(?<![-\w])must(?:n't|\s+not)?(?![-\w])"),
         _ex(("The checkout endpoint must keep p95 < 200 ms at 1k rps.", "constraint"),
             ("We must never log card numbers.", "constraint"),
             ("You mustn't log tokens.", "constraint"),
             ("The essay must be no longer than 2000 words.", "constraint"),
             ("Every migration must be reviewed by a second person.", "constraint"),
             ("I must say this looks good.", None),
             ("It must be the cache.", None),
             ("There must have been a timeout.", None),
             ("Gina: It must be scary stepping into the unknown but I know you can do it, Jon.",
              None),
             ("It must be scary stepping into the unknown but I know you can do it, Jon.", None),
             ("Wow, Jon, you must be so excited!", None),
             ("Seeing your students grow and succeed must be really fulfilling.", None),
             ("You must love seeing how you've grown as an artist.", None),
             ("Your four pups must have a lot of fun.", None),
             ("Dairy-free is a must for me, especially for desserts.", None),
             ("I can only imagine how tough it must be.", None),
             ("Must feel great to turn your passion into a career.", None),
             ("All pets must be on a leash and accompanied by a registered guest at all times"
              " when outside the guest room.", None),
             ("This would be the first monster that the player must hunt.", None),
             ("Clients must bring their blue Pantry card to the Pantry to receive food.", None),
             ("Important: card numbers must not be logged.", "constraint"),
             ("You must run the migrations in a transaction.", "constraint"),
             ("We must never push directly to main.", "constraint"),
             ("You must include a short explanation of Searle's main argument.", "constraint"),
             ("Every bug must be fixed before merging.", "constraint"),
             ("Request Changes - The authentication bug must be fixed before merging.", None),
             ("Oh, you must try the pasta at Luigi's!", None),
             ("You must come to the beach with us.", None),
             ("We must visit the museum next week.", None),
             ("You must check out the new bakery!", None),
             ("You must send me pictures from the trip!", None))
         + _agent(("Important: card numbers must not be logged.", "constraint"),
                  ("It must be the cache.", None),
                  ("Request Changes - The authentication bug must be fixed before merging.",
                   None),
                  ("The authentication bug must be fixed before merging.", None)),
         priority=30,
         not_in=_rx(_REVIEW_VERDICT + r"|(?:^|[-–—:]\s)\W*(?:the|this|that|these|those|our|"
                    r"my|your)\s+(?:(?!must\b)[\w'-]+\s+){0,5}must\s+(?:be|get)\s+(?:fixed|"
                    r"resolved|addressed|repaired|corrected)\b"),
         chat_not_in=_rx(r"\b(?:we|you|one|i|everyone|everybody|y'all)\s+(?:(?:all|really|just|"
                         r"definitely|simply|absolutely)\s+)?must(?:n't|\s+not)?(?![-\w])"
                         r"(?!\s+(?:(?:never|always|also)\s+)?(?:" + _WORK_VERBS + r")\b)"
                         r"(?![^.!?]*(?:\b(?:" + _WORK_NOUNS + r")\b|\d|\w[_./]\w|`))"),
         # A frame ("Important:") opens a rule: what follows it is read as its subject.
         chat_not_before=_rx(r"(?:^|[,;(]|(?<!\bimportant)(?<!\bremember)(?<!\breminder):)"
                             r"(?=[^,;:(]*[a-z])(?![^,;:(]*(?:\b(?:we|you|one|i|"
                             r"everyone|everybody|nobody|claude|agent|assistant|model|"
                             + _WORK_NOUNS + r")\b|\w[_./]\w|`))[^,;:(]*$"),
         not_before=_rx(r"\b(?:it|that|this|there|they|he|she|which|who|what|something|"
                        r"someone|everything|a|the)\s+$"
                        r"|^\s*(?!(?:during|nothing|something|everything|anything|string|"
                        r"thing|king|spring|morning|evening|bring)\b)[a-z]+ing\b[^,;:]*$"
                        r"|\b(?:imagine|guess|bet|sure|surely|probably|suppose|wonder|seems?|"
                        r"how)\b"),
         not_after=_rx(r"\s+(?:really|surely|certainly|definitely|truly|so|such|totally|"
                       r"absolutely|indeed|just)\b"
                       r"|\s+(?:say|admit|confess|agree|apologi[sz]e|thank|ask|remember)\b"
                       r"|\s+(?:" + _STATIVE + r")\b"
                       r"|\s+(?:not\s+)?be\s+(?!" + _CHECKABLE + r")"
                       r"|\s+have\s+(?!(?:an?|at\s+least|no|one|two|three|exactly|its|their|"
                       r"\d)\b)|\s+have\s+an?\s+(?:lot|great|good|blast|ton|ball|hard)\b"
                       r"|'ve\b"),
         triggers=("must",)),
    Rule("en.constraint.never", 4, "constraint", "en",
         "`never` as an instruction: at the start (also after `Remember:`, `To be clear:`),"
         " after `we`, or after `you should`/`you must` (`never mind`, `you never know`,"
         " descriptions such as `the tests never pass`, stories such as `never tried it` and"
         " advice such as `never give up` are not cues). In chat the rest must name the work"
         " and `we must never forget` is a feeling; said to an agent, it is about the work.",
         _rx(_LEAD + _FRAME + r"never(?![-\w])"
             r"|\b(?:we|one)\s+(?:(?:should|must|will|shall|can)\s+)?never(?![-\w])"
             r"|\byou\s+(?:should|must|will|shall|can)\s+never(?![-\w])"),
         _ex(("Never commit secrets to the repo.", "constraint"),
             ("We never deploy on Fridays.", "constraint"),
             ("You should never exceed 100 connections per worker.", "constraint"),
             ("never mind, that was the wrong file", None),
             ("The tests never pass on CI.", None),
             ("Never the same error twice.", None),
             ("Never give up!", None),
             ("Never say never!", None),
             ("Never tried it, but it's supposed to be awesome.", None),
             ("You never shy away from a challenge and always try something new.", None),
             ("You never know the difference a kind gesture can make.", None),
             ("Never found on antimagic weapons.", None),
             ("We must never forget this day.", None))
         + _agent(("Please never push directly to main.", "constraint"),
                  ("Remember: never log card numbers.", "constraint"),
                  ("Never mind, I found it.", None))
         + _chat("Please never push directly to main."),
         priority=30,
         not_after=_rx(r"\s+(?:" + _DESCRIPTIVE + "|" + _PAST + "|" + _STATIVE + "|"
                       + _ENCOURAGE + r"|say\s+never|too|late|easy)\b"),
         not_before=_rx(_STORY_JOIN), chat_not_after=_rx(r"\s+forget\b|" + _NOT_ABOUT_WORK),
         triggers=("never",)),
    Rule("en.constraint.always", 4, "constraint", "en",
         "`always` as an instruction: at the start (also after `Remember:`), after `we`, or"
         " after `you should`/`you must` (`always the same flaky test`, `always happy to"
         " help`, `always running around`, `we always have a great time` are not cues). In"
         " chat the rest must name the work; said to an agent, it is about the work.",
         _rx(_LEAD + _FRAME + r"always(?![-\w])"
             r"|\b(?:we|one)\s+(?:(?:should|must|will|shall)\s+)?always(?![-\w])"
             r"|\byou\s+(?:should|must|will|shall)\s+always(?![-\w])"),
         _ex(("Always run the migrations in a transaction.", "constraint"),
             ("We always pin dependency versions.", "constraint"),
             ("it's always the same flaky test", None),
             ("Always the same flaky test.", None),
             ("The build always fails on Mondays.", None),
             ("Always fails on the first run.", None),
             ("Melanie: We always look forward to our family camping trip.", None),
             ("We always look forward to our family camping trip.", None),
             ("Always happy to share them with you.", None),
             ("Always running around, exploring and having a great time.", None),
             ("You always mentioned your love for gaming.", None),
             ("We always have a great time together, especially on Wednesdays.", None),
             ("I remember watching the Masters with my family - it was such a fun experience,"
              " and we always make a big deal of it.", None))
         + _agent(("Always run the linter before committing.", "constraint"),
                  ("Always open a PR against develop.", "constraint"),
                  ("Always open to new ideas.", None),
                  ("Always the same flaky test.", None))
         + _chat("Always run the linter before committing."),
         priority=30,
         not_after=_rx(r"\s+(?:" + _DESCRIPTIVE + "|" + _PAST + "|" + _STATIVE + r"|[a-z]+ing|"
                       r"happy|glad|up|great|good|fun|nice|ready|welcome|on|down|open(?!\s+(?:an?|the)\s)|around|"
                       r"busy|excited|hungry|by|with|for|at|there|have|try|go|end\s+up|hang|"
                       r"spend|get|make\s+time|"
                       r"talk|chat|laugh|celebrate|manage|struggle)\b"),
         not_before=_rx(r"\b(?:not|almost|nearly|hardly)\s+$|" + _STORY_JOIN),
         chat_not_after=_rx(_NOT_ABOUT_WORK),
         triggers=("always",)),
    Rule("en.constraint.do_not", 3, "constraint", "en",
         "`Do not …` / `Don't …` as an instruction at the start of a sentence (also after"
         " `To be clear:`, `Remember:`; `don't worry`, `don't forget`, and advice to a person"
         " such as `don't give up`, `don't be afraid to …` or anything about `yourself` are"
         " not cues; `don't ever …` is one only when said to an agent).",
         _rx(_LEAD + _FRAME + r"(?:do\s+not|don'?t)\b"),
         _ex(("Do not touch the legacy billing module.", "constraint"),
             ("Please don't use ORMs in this service.", "constraint"),
             ("Don't ask me for clarifications.", "constraint"),
             ("Don't worry about the tests.", None),
             ("I don't know why it fails.", None),
             ("Don't forget that the demo is at 3 pm.", None),
             ("Don't miss a beat!", None),
             ("Don't quit, remember, failures lead you closer to success.", None),
             ("Don't let the bumps in the road bring you down.", None),
             ("Don't be afraid to reach out to people in your field for help and contacts.",
              None),
             ("Don't limit yourself in your comofort zone!", None),
             ("But don't get discouraged, just keep going.", None))
         + _agent(("Don't ever log card numbers.", "constraint"),
                  ("To be clear: don't use ClMail for communication, use the builtin subagent"
                   " teams.", "constraint"),
                  ("Don't worry about the failing test.", None))
         + _chat("Don't ever log card numbers."),
         priority=30, chat_not_after=_rx(r"\s+ever\b"),
         not_after=_rx(r"\s+(?:worry|bother|panic|know|think|mind|care|forget|get\s+me|sweat|"
                       r"hesitate|understand|remember|see|have|feel|miss|"
                       r"be\s+(?:sorry|afraid|scared|shy|discouraged|too|so|a\s+stranger|"
                       r"nervous|hard|down|sad|ashamed|embarrassed|silly|surprised)|"
                       r"get\s+(?:discouraged|down|too|so|caught|stuck|hung)|" + _ENCOURAGE
                       + r")\b|.*\byoursel(?:f|ves)\b"),
         triggers=("do not", "don't", "dont")),
    Rule("zh.constraint.must", 2, "constraint", "zh",
         "`必须`、`务必`、`一定要`、`禁止`、`严禁`、`不得`、`不许`、`不准`"
         "（`必须说`、`必须的` 不算；以 `啊`、`呀`、`哦`、`吧` 收尾的寒暄也不算）。",
         _rx(r"必须|务必|一定要|禁止|严禁|不得|不许|不准"),
         _ex(("结账接口必须保持p95小于200毫秒。", "constraint"),
             ("禁止在周五部署。", "constraint"),
             ("我必须说，这个设计很好。", None),
             ("这是必须的！", None),
             ("今晚的聚会你一定要来玩啊！", None)),
         priority=30, not_after=_rx(r"说|的\s*[。！!]?$|.*[啊呀哦吧哈]\s*[。！!~～]*$"),
         triggers=("必须", "务必", "一定要", "禁止", "严禁", "不得", "不许", "不准")),
    Rule("zh.constraint.dont", 1, "constraint", "zh",
         "`不要` / `别` 作为指令：句首、逗号后或 `请`、`千万`、`一定`、`我们` 之后"
         "（`不要紧`、`别担心`、`要不要` 不算）。",
         _rx(r"(?:^|[，,]\s*|请|千万|一定|绝对|永远|你们?|我们|大家)(?:不要|别(?!人|的|处))"),
         _ex(("不要在周五下午部署。", "constraint"),
             ("请不要修改生成的文件。", "constraint"),
             ("不要紧，已经好了。", None),
             ("要不要加缓存？", None),
             ("别担心，测试会过的。", None)),
         priority=30, not_after=_rx(r"紧|了|担心|着急|客气|管|忘"),
         triggers=("不要", "别")),
    Rule("en.preference.prefer", 3, "preference", "en",
         "`I prefer` / `I'd prefer` / `I would prefer` / `I actually prefer` / `my preference"
         " is` (not `see which one I prefer`, not a bare `I'd prefer that` that names"
         " nothing).",
         _rx(r"\bi(?:'d|\s+would)?\s+(?:(?:really|strongly|generally|usually|much|actually|"
             r"personally|definitely|still)\s+)?prefer\b"
             r"|\bmy\s+preference\s+is\b"),
         _ex(("I prefer small commits with one change each.", "preference"),
             ("I'd prefer short commit messages.", "preference"),
             ("Do you prefer tabs?", None),
             ("Use whatever you prefer.", None),
             ("I think I'll try out italki and Conversation Exchange first, and see which one I"
              " prefer.", None),
             ("Let me know if you prefer a different format.", None),
             ("I actually prefer the gemini AfterAgent name.", "preference"),
             ("I'd prefer that", None)),
         priority=40,
         not_after=_rx(r"\s+not\s+to\s+say\b|\s*(?:that|this|it|one)?\s*[.!:]?\s*$"),
         not_before=_rx(r"\b(?:which(?:\s+one)?|what|whichever|whatever|if|whether)\s+$"),
         triggers=("prefer",)),
    Rule("zh.preference", 1, "preference", "zh",
         "`我偏好` / `我更喜欢` / `我更倾向` / `我的偏好` / 句首 `偏好：`（`偏好设置` 不算）。",
         _rx(r"我(?:更|比较|个人)?(?:偏好|更喜欢|更倾向)|我的偏好|^偏好\s*[：:]"),
         _ex(("我偏好用tab缩进。", "preference"),
             ("我更喜欢简短的提交信息。", "preference"),
             ("打开偏好设置。", None),
             ("你偏好哪种风格？", None),
             ("这些刚好符合我的预算和喜好。", None)),
         priority=40,
         triggers=("偏好", "喜欢", "倾向")),
    Rule("en.open_question.inline", 1, "open_question", "en",
         "`an open question is …` / `one open question …` inside a sentence.",
         _rx(r"\b(?:an?|one|the|another)\s+open\s+question\b"),
         _ex(("An open question is whether we need SSO.", "open_question"),
             ("The open question remains who owns billing.", "open_question"),
             ("That question is open to debate.", None),
             ("That's a great question.", None),
             ("Now, I have another question.", None)),
         priority=50,
         triggers=("question",)),
    Rule("en.fact.label", 1, "fact", "en",
         "A sentence that starts with `Remember:`, `Note:`, `Fact:`, `FYI:` or `NB:`.",
         _rx(_LEAD + r"(?:remember|notes?|facts?|fyi|nb|n\.b\.|important)\s*[:：]\s*"),
         _ex(("Note: the API port is 8080.", "fact"),
             ("Remember: the staging database is db-staging-2 on port 5433.", "fact"),
             ("FYI: the CI runner has 4 GB of RAM.", "fact"),
             ("Note to self: buy milk.", None),
             ("I remember the old API.", None),
             ("Footnote: see the appendix.", None)),
         strip=True, priority=60,
         triggers=("remember", "note", "fact", "fyi", "nb", "n.b.", "important")),
    Rule("en.fact.remember_that", 2, "fact", "en",
         "`Remember that …` / `Keep in mind that …` / `Note that …` at the start of a"
         " sentence (`remember to …`, `remember that day …` and the encouragement"
         " `Remember, …` are not cues).",
         _rx(_LEAD + r"(?:remember|keep\s+in\s+mind|bear\s+in\s+mind|note)\s+that\b\s*"),
         _ex(("Remember that the staging DB is read-only.", "fact"),
             ("Keep in mind that prices are in EUR.", "fact"),
             ("Remember that the target persona is a Developer.", "fact"),
             ("Do you remember the port?", None),
             ("I can't remember the port.", None),
             ("Remember to run the migrations.", None),
             ("Remember, just do it!", None),
             ("And remember, I'm always here for you.", None),
             ("But remember, even small things can make a difference.", None),
             ("Remember that time we went camping at the lake.", None)),
         strip=True, priority=60,
         not_after=_rx(r"(?:time|day|night|week|trip|place|song|movie|one|guy|girl)\b"),
         triggers=("remember", "in mind", "note")),
    Rule("zh.fact.remember", 1, "fact", "zh",
         "句首 `记住`、`请记住`、`记一下`（`记住了`、`记不住` 不算）或 `备注：`、`注意：`。",
         _rx(r"^(?:请|要|你要)?(?:记住|记下|记一下)\s*[：:，,]?\s*|^(?:备注|注意|笔记)\s*[：:]\s*"),
         _ex(("记住：值班室分机号 4324。", "fact"),
             ("请记住API端口是8080。", "fact"),
             ("好的，我记住了。", None),
             ("我记不住这么多端口。", None),
             ("我还记得那场比赛，他进了两个球。", None)),
         strip=True, priority=60, not_after=_rx(r"了|吗|得|\s*$"),
         triggers=("记", "备注", "注意", "笔记")),
    *AGENT_RULES,  # -- said to a coding agent (agent_rules.py)
    # -- assistant proposals -----------------------------------------------------------------
    Rule("en.proposal.suggest", 1, "proposal", "en",
         "An assistant's `I suggest` / `I propose` / `I recommend` / `I'd recommend` /"
         " `my recommendation is`.",
         _rx(r"\b(?:i|we)(?:'d|\s+would)?\s+(?:(?:strongly|also)\s+)?(?:suggest|propose|recommend)\b"
             r"|\bmy\s+(?:suggestion|recommendation|proposal)\s+(?:is|would\s+be)\b"),
         _ex(("I suggest we add a partial index on orders(status).", "proposal", "assistant"),
             ("I recommend a read-through wrapper around the product lookup.", "proposal",
              "assistant"),
             ("As you suggested, I added retries.", None, "assistant"),
             ("I suggest we use Postgres.", None, "user"),
             ("Always follow the product instructions and dosage"
              " recommendations.", None, "assistant"),
             ("If you're in the market for a new keyboard or headset, I can offer some general"
              " suggestions as well.", None, "assistant")),
         priority=20, roles=("assistant",),
         triggers=("suggest", "propos", "recommend")),
    Rule("en.proposal.could", 2, "proposal", "en",
         "An assistant's `we could …` / `you could …` opening a clause (not `could not`,"
         " `could have`, `could be`, not inside `how you could …`, `ideas you could try`,"
         " `glad we could …`).",
         _rx(r"\b(?:we|you)\s+could\b"),
         _ex(("We could shard the orders table by region.", "proposal", "assistant"),
             ("If it still fails, you could pin the driver to 2.1.", "proposal", "assistant"),
             ("We could not reproduce the failure.", None, "assistant"),
             ("We could have caught this earlier.", None, "assistant"),
             ("Could we use Redis here?", None, "assistant"),
             ("I'm so glad we could discuss the e-bike rental and charging options.", None,
              "assistant"),
             ("Here's an example of how you could incorporate these complex carbohydrates into"
              " your meals:", None, "assistant"),
             ("Here are some ideas for promotions you could consider:", None, "assistant"),
             ("Additionally, by buying secondhand, you could help reduce the demand for new"
              " products.", None, "assistant")),
         priority=30, roles=("assistant",),
         not_after=_rx(r"(?:n't|\s+not|\s+have|\s+never|\s+be|\s+see|\s+tell|\s+help)\b"),
         not_before=_rx(r"\b(?!(?:and|but|or|so|then|also|alternatively|maybe|perhaps|"
                        r"otherwise|instead|additionally|next|first|finally|now|here)\s+$)"
                        r"[a-z']+\s+$"),
         triggers=("could",)),
    Rule("zh.proposal", 1, "proposal", "zh",
         "助手的 `我建议`、`建议…`、`我推荐`、`我提议`（`你的建议` 不算）。",
         _rx(r"(?:^|[，,]\s*|我们?)(?:建议|推荐|提议)"),
         _ex(("我建议把商品列表缓存60秒。", "proposal", "assistant"),
             ("建议先加索引再上线。", "proposal", "assistant"),
             ("谢谢你的建议。", None, "assistant"),
             ("我建议用Postgres。", None, "user"),
             ("好的，我会继续等待您的明确指令。", None, "assistant")),
         priority=20, roles=("assistant",),
         triggers=("建议", "推荐", "提议")),
    # -- corrections and retractions -------------------------------------------------------------
    Rule("en.correction.label", 1, "correction", "en",
         "`Correction:` / `Actually, …` / `Scratch that, …` at the start: the statement"
         " replaces an earlier one.",
         _rx(_LEAD + r"(?:corrections?\s*[:：]|actually\b[,:]?|scratch\s+that\b[,.:;]?)\s*"),
         _ex(("Actually, the API port is 9090 now.", "correction"),
             ("Correction: the cache limit is 4 GB, not 3 GB.", "correction"),
             ("Actually, we decided to ship on Monday.", "decision"),
             ("It actually works now.", None),
             ("I'm actually planning to visit the same mountain range where I went skiing with"
              " friends earlier this year.", None),
             ("I've been learning a lot about data science recently, actually.", None)),
         strip=True, priority=5,
         triggers=("correct", "actually", "scratch")),
    Rule("en.correction.instead_of", 3, "correction", "en",
         "`instead of X use Y` / `use Y instead of X` / `let's use Y instead of X` (an"
         " instruction; `I took the bus instead of driving` is a story): X names what is"
         " replaced.",
         _rx(r"\binstead\s+of\s+(?P<old>[^,.;]{1,60}?)\s*,?\s+(?:use|go\s+with|pick|choose|"
             r"try|we(?:'ll|\s+will)?\s+use)\b"
             r"|^(?:(?:please|so|and|ok(?:ay)?|let(?:'|’)?s|let\s+us|we'll|we\s+will)[,\s]+)*"
             r"(?:use|go\s+with|pick|choose|switch\s+to|"
             r"prefer|call\s+it|name\s+it|put\s+it\s+in|store\s+it\s+in|write|return|run)\b"
             r"[^.;]*?\binstead\s+of\s+(?P<old2>[^,.;]{1,60})"),
         _ex(("Instead of pip-tools use uv for locking.", "correction"),
             ("Use uv instead of pip-tools.", "correction"),
             ("We went to the park instead.", None),
             ("I've been taking the bus to work instead of driving, so I've got more time to"
              " listen to podcasts now.", None),
             ("I'm thinking of grilling the short ribs instead of braising them.", None),
             ("But instead of giving up, I turned it into a learning experience.", None),
             ("Let's use apple container instead of docker proper.", "correction"))
         + _agent(("Let's use apple container instead of docker proper.", "decision")),
         priority=5,
         triggers=("instead",)),
    Rule("en.correction.not_but", 2, "correction", "en",
         "`not X but Y` and `Y, not X` where X names something (a number, a symbol, a"
         " capitalised name; `progress, not perfection` does not): X names what is replaced.",
         _rx(r"\bnot\s+" + _NOT_CONTRAST + _NAMED + r"(?P<old>[^,.;]{1,40}?)\s*,?\s+but\s+"
             r"(?!(?:also|not|still|i|i'm|i've|i'd|we|we're|we've|you|he|she|they|it|it's|"
             r"there|that|this)\b)"
             r"|,\s*not\s+" + _NOT_CONTRAST + _NAMED + r"(?P<old2>[^,.;!?]{1,40}?)\s*[.!]?$"),
         _ex(("The deadline is not Friday but Monday.", "correction"),
             ("The cache limit is 4 GB, not 3 GB.", "correction"),
             ("It's get_data_loaders, not get_loader!", "correction"),
             ("Not only fast but also cheap.", None),
             ("It works, not sure why.", None),
             ("Not easy facing setbacks but I believe in you.", None),
             ("Thanks for reminding me to focus on progress, not perfection.", None),
             ("This ring on his hand is just a decoration, not a wedding ring.", None)),
         priority=5, not_before=_rx(r"\b(?:if|whether)\b[^,]*$"),
         triggers=("not",)),
    Rule("en.correction.instead", 1, "correction", "en",
         "Said to an agent: a statement that ends in `instead` (`switch the orders service"
         " to MySQL 8 instead`): it replaces the earlier item it shares words with.",
         _rx(r"\binstead\s*[.!]?\s*$"),
         _agent(("Switch the orders service to MySQL 8 instead.", "decision"),
                ("Can you print the error instead?", None),
                ("Print the error instead.", "correction"))
         + _chat("We went to the park instead.", "I had tea instead."),
         priority=6, contexts=("agent",),
         triggers=("instead",)),
    Rule("zh.correction", 1, "correction", "zh",
         "`更正：` / `纠正：`、`改为` / `改成` / `改用`、`不是X而是Y`。",
         _rx(r"^(?:更正|纠正|订正)\s*[：:]\s*|改为|改成|改用"
             r"|不是(?P<old>[^，,。；;]{1,30}?)[，,]?\s*而是"),
         _ex(("更正：缓存上限是4 GB。", "correction"),
             ("把测试环境的端口改为5433。", "correction"),
             ("数据库不是MySQL，而是Postgres。", "correction"),
             ("决定：测试环境的端口改为 5433。", "decision"),
             ("这个改动很大。", None),
             ("我最近其实一直在学数据科学。", None)),
         strip=True, priority=5,
         triggers=("更正", "纠正", "订正", "改", "不是")),
    Rule("en.retraction", 1, "retraction", "en",
         "`Forget that …` / `Forget about …` / `Disregard what I said about …`: retract the"
         " matching item (`Forget that, …` alone and `don't forget` are not cues).",
         _rx(_LEAD + r"(?:forget|disregard)\s+(?:that|about|what\s+i\s+said\s+about|my\s+"
             r"(?:note|remark)\s+about)\s+(?P<target>\S.*)$"),
         _ex(("Forget that the API port is 8080.", "retraction"),
             ("Please forget about the Friday deploy.", "retraction"),
             ("Forget that, it's fine.", None),
             ("Don't forget that the demo is at 3 pm.", None),
             ("I forget that sometimes.", None)),
         priority=1,
         triggers=("forget", "disregard")),
    Rule("zh.retraction", 1, "retraction", "zh",
         "句首 `忘掉…`、`请忘记…`、`忘记我说的…`、`撤回…`（`忘记密码了` 不算）。",
         _rx(r"^(?:请)?(?:忘掉|撤回)(?:之前|刚才|我)?(?:说的|记的)?(?:那条|关于)?(?P<target>.+)$"
             r"|^(?:请忘记|忘记(?:之前|刚才|我)说的)(?:那条|关于)?(?P<target2>.+)$"),
         _ex(("忘掉之前说的端口8080。", "retraction"),
             ("请忘记周五部署那条。", "retraction"),
             ("忘记密码了。", None),
             ("我总是忘记带钥匙。", None),
             ("别忘了明天的会议。", None)),
         priority=1,
         triggers=("忘", "撤回")),
)

# Key–value statements are not kinds: they give a subject key, and act only when an
# earlier item in the session has that key (then they restate or correct it). Their
# pattern is the key grammar in ``subject_key``; the regex here only documents it.
RESTATEMENT_RULES: tuple[Rule, ...] = (
    Rule("en.kv", 2, "restatement", "en",
         "`the X is Y`, `set X to Y`, `X: Y` with a short value that looks like one (a"
         " number, a name, a symbol): no kind of its own; it restates the earlier item with"
         " the same subject key `X`, which a new value supersedes. `X: Y` needs a known key"
         " or a fact-shaped value, and a speaker's name is never a key.",
         _rx(r"\b(?:is|are|to|:)\b"),
         _ex(("The API port is 9090.", "restatement"),
             ("Set the API port to 9090.", "restatement"),
             ("The deadline is Friday.", "restatement"),
             ("The build is broken.", None),
             ("It is 9090.", None),
             ("They are so sweet and playful - they really liven up the house!", None),
             ("This is an information about repudiating a building contract.", None)),
         priority=90),
    Rule("zh.kv", 1, "restatement", "zh",
         "`X是Y`、`X为Y`、`把X设为Y`：没有自己的类型，只在会话中已有同一主题键的条目时起作用。",
         _rx(r"是|为"),
         _ex(("API端口是9090。", "restatement"),
             ("这是一个bug。", None),
             ("在但丁的《神曲》中，《地狱》是第一部分，这首诗描述了但丁的想象之旅。", None),
             ("他们又可爱又爱玩，家里热闹多了！", None)),
         priority=90),
)
# fmt: on

ALL_RULES: tuple[Rule, ...] = RULES + RESTATEMENT_RULES
RULES_BY_ID: dict[str, Rule] = {rule.id: rule for rule in ALL_RULES}
# An option pick is resolved against what the assistant offered, not read like a cue.
PICK_RULE = RULES_BY_ID["en.decision.option_pick"]
KIND_RULES = tuple(
    r for r in RULES if r.kind not in ("correction", "retraction") and r is not PICK_RULE
)
CORRECTION_RULES = tuple(r for r in RULES if r.kind == "correction")
RETRACTION_RULES = tuple(r for r in RULES if r.kind == "retraction")


def is_label(text: str) -> bool:
    """Whether ``text`` opens with a framing cue ("Decision:", "Remember that")."""
    return any(rule.strip and rule.pattern.match(text) for rule in RULES)


def all_examples() -> list[tuple[Rule, Example]]:
    return [(rule, example) for rule in ALL_RULES for example in rule.examples]

"""Supersession: which memory line states a value that a later line replaced.

An agent's memory is a diary of changes: "Redis `maxmemory` is 4gb" in August, "Raised Redis
`maxmemory` from 4gb to 6gb" in September, "Redis `maxmemory` is now 8gb" in November. Every
line stays, so a search finds all three, and without help the oldest may rank first. This
module finds, without a model and deterministically, that a later line states another value
for the same thing as an earlier one, and records the earlier line as superseded by the later.

Pure functions over :class:`Statement` values (path, line number, date, text). Two kinds of
evidence, in English and Chinese:

- an explicit change: "switched from X to Y", "changed `X` from 8 to 4", "4 → 6", "no longer
  X", "改成", "换成", "从 X 改为 Y", "is now", "从今天起";
- the same attribute stated again with a new value ("Redis maxmemory is 2gb" … "Redis maxmemory
  set to 4gb"), accepted only when the two subjects are the same words.

Precision matters more than recall: a current statement wrongly marked superseded is worse than
a superseded one missed. So a fact needs a recognisable subject (not "reason", "next week"…),
the values must be of one kind (numbers with numbers, names with names) and differ, and a file
without a date of its own (MEMORY.md, notes, transcripts: dated by their mtime) supersedes a
diary's line only by an explicit change.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .dates import day_of, path_date

#: Bumped when what :func:`detect` finds changes: a sync then recomputes the stored relation.
DETECTOR_VERSION = 5


@dataclass(frozen=True)
class Statement:
    """One line of memory: where it is, when it was true (``day``: ``YYYY-MM-DD``), its text.

    ``dated``: the day comes from the file's name or the line itself (a diary), not from a
    file's mtime (MEMORY.md, notes, transcripts), which a checkout or an edit can move.
    """

    path: str
    line: int
    day: str
    text: str
    dated: bool = True


@dataclass(frozen=True)
class Fact:
    """What one statement says: an attribute (its subject words and identifiers) and values."""

    stmt: Statement
    subject: frozenset[str]
    keys: frozenset[str]
    values: frozenset[str]
    old: frozenset[str]  # the value an explicit change names as the one replaced
    explicit: bool  # "from X to Y", "no longer", "is now", "改成", "现在"…
    #: "attr" (X is V), "change" (from X to Y), "count", "version"; "passive": a statement
    #: that a later explicit change may supersede but that replaces nothing itself (a
    #: measurement, "错误率 1.2%", or who leads what, without "now")
    kind: str
    codes: frozenset[str] = frozenset()  # the line's backticked code (`0 2 * * *`)


@dataclass(frozen=True)
class Supersession:
    """``old_path#L{old_line}`` is superseded by ``new_path#L{new_line}`` (about ``subject``)."""

    old_path: str
    old_line: int
    new_path: str
    new_line: int
    subject: str

    @property
    def new_citation(self) -> str:
        return f"{self.new_path}#L{self.new_line}"


# --------------------------------------------------------------------------- words

_STOP = frozenset("""
a an the our we us is are was were be been being it its this that these those of for on in at to
by with and or as per now currently current new old still only main all just set sets setting
has have had will would should can could do does did not no longer from into onto than then
there here which who what when where how today yesterday again also very so up down out over
run runs running use uses used using moved move switched switch changed change changes raised
raise lowered lower increased increase decreased decrease reduced reduce bumped bump updated
update upgraded upgrade downgraded cut dropped went grew replaced swapped shifted adjusted
migrated our's anymore both each every one two three four five six seven eight nine ten
""".split())

#: Subjects that name an event or an explanation, not an attribute with one value at a time:
#: "Reason: …", "Next week: …" recur with new values and replace nothing.
_GENERIC = frozenset("""
reason reasons why cause root result results fix problem issue issues plan plans idea note notes
todo status summary context goal goals risk risks action actions decision decisions outcome
question questions answer update window target next week weeks tomorrow yesterday today tonight
morning afternoon evening monday tuesday wednesday thursday friday saturday sunday lesson
lessons learned follow followup follow-up surprise surprises agenda meeting call example
step steps attendee attendees time date day days result effect impact test tests
""".split())
_GENERIC_ZH = ("原因", "结果", "问题", "下周", "今天", "昨天", "明天", "计划", "目标", "备注",
               "本周", "上周", "会议", "例子", "影响", "根因", "午间分享", "分享", "步骤", "决定",
               "结论", "主要", "大部分", "统一", "约定", "建议")
#: Words of a value that make the line an event ("Sam is out on Monday"), not a state.
_EVENT_VALUE = re.compile(
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|yesterday|today|"
    r"tonight|next|last|ago|week|weeks)\b|周[一二三四五六日末]|明天|昨天|今天|下周|上周", re.I)
#: Verbs that open an account of something done ("Ran the audit: 7 advisories"), not a state.
_DONE = re.compile(r"^\s*(?:ran|did|met|saw|got|made|wrote|found|took|sent|had|spent|"
                   r"[a-z]+ed)\b", re.I)

#: One attribute in two languages: a Chinese term → the English word (its stem) that names the
#: same attribute, so that "Who is on call now?" finds "从今天起值班人是 Wen" and an English line
#: and a Chinese change of it are one fact. Attributes an agent's memory tracks, not a lexicon.
_ZH_SYNONYMS: dict[str, str] = {
    "值班": "oncall", "代理": "proxy", "超时": "timeout", "备份": "backup", "域名": "domain",
    "并发": "concurrency", "数据库": "database", "版本": "version", "短信": "sms",
    "端口": "port", "供应商": "vendor", "保留": "retention", "负责人": "lead", "日志": "log",
    "站会": "standup", "副本": "replica", "证书": "certificate", "镜像": "image",
}
#: English spellings of one word: "on call", "on-call" → ``oncall``; stems that differ from
#: the table's word ("logs", "proxies"); a name's short form ("Postgres" → PostgreSQL).
_EN_JOINED = re.compile(r"\b(?:on[- ]call|time[- ]out|stand[- ]up|back[- ]up)\b", re.I)
_EN_ALIAS = {"logs": "log", "proxi": "proxy", "postgr": "postgresql", "k8s": "kubernetes"}
_CJK = r"\u3400-\u4dbf\u4e00-\u9fff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*[A-Za-z0-9]|[A-Za-z]")
_IDENT = re.compile(r"`([^`]{1,60})`|\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)\b")
_NUM = re.compile(r"\d+(?:[.:]\d+)*")
_TIME_PREFIX = re.compile(r"^(?:\d{1,2}:\d{2}(?:[–-]\d{1,2}:\d{2})?|\d{4}-\d{2}-\d{2})\s+")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_LINE_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")


def _stem(w: str) -> str:
    w = w.lower().strip(".-")
    for suf in ("ing", "ed", "es", "s"):
        if len(w) > len(suf) + 3 and w.endswith(suf):
            return w[: -len(suf)]
    return w


def subject_words(text: str) -> frozenset[str]:
    """A subject's words: English content words (stemmed, identifiers split at ``_``) and the
    character bigrams of its Chinese runs."""
    out: set[str] = set()
    text = _EN_JOINED.sub(lambda m: re.sub(r"[- ]", "", m.group(0)), text.replace("`", " "))
    for m in _WORD.finditer(text):
        for part in m.group(0).lower().split("_"):
            if part and part not in _STOP and not _NUM.fullmatch(part):
                stem = _stem(part)
                out.add(_EN_ALIAS.get(stem, stem))
    for run in _CJK_RUN.findall(text):
        out.update(_cjk_words(run))
    return frozenset(w for w in out if w)


def _cjk_words(run: str) -> set[str]:
    """A Chinese run's words: each synonym-table term as its English word ("值班人" →
    ``oncall``), the rest as character bigrams (a single character left beside a term is
    dropped: "人" of "值班人" names no attribute)."""
    out: set[str] = set()
    pieces = [run]
    for term, word in _ZH_SYNONYMS.items():
        if any(term in p for p in pieces):
            out.add(word)
            pieces = [x for p in pieces for x in p.split(term)]
    for p in pieces:
        if len(p) >= 2 or p == run:
            out.update(p[i : i + 2] for i in range(max(1, len(p) - 1)))
    return out


def _keys(text: str) -> frozenset[str]:
    """Identifiers (backticked names, ``UPPER_SNAKE``) without a value glued on (``X=8``)."""
    out = set()
    for m in _IDENT.finditer(text):
        name = (m.group(1) or m.group(2) or "").split("=")[0].strip().lower()
        # a setting's name, not a file or a command (a file's lines are about many things)
        if name and not _NUM.fullmatch(name) and not re.search(r"[\s/.:(]", name):
            out.add(name)
    return frozenset(out)


def value_tokens(text: str) -> frozenset[str]:
    """A value's tokens: numbers with their unit (``4gb``, ``8``, ``02:00``, ``16.4``), code,
    and names (capitalised or CJK); lower-cased."""
    code = re.fullmatch(r"\s*`([^`]+)`\s*", text)
    if code:
        return frozenset({code.group(1).lower()})
    text = text.strip().strip("`*\"'“”")
    out: set[str] = set()
    for m in re.finditer(r"(\d+(?:[.:]\d+)*)\s?(gb|mb|kb|tb|ms|s|%|k)?\b", text, re.I):
        out.add((m.group(1) + (m.group(2) or "")).lower())
    for m in re.finditer(r"`([^`]+)`", text):
        out.add(m.group(1).lower())
    for m in re.finditer(r"\b[A-Z][A-Za-z0-9-]+", text):
        out.add(m.group(0).lower())
    for run in _CJK_RUN.findall(text):
        out.add(run)
    if not out:
        words = [w.lower() for w in _WORD.findall(text)][:3]
        if words:
            out.add(" ".join(words))
    return frozenset(out)


def _numeric(values: frozenset[str]) -> bool:
    return any(v[:1].isdigit() for v in values)


# --------------------------------------------------------------------------- patterns

_CHANGE_VERB = (r"(?:chang|rais|lower|increas|decreas|reduc|bump|switch|mov|migrat|upgrad|"
                r"downgrad|updat|cut|drop|replac|swapp|shift|adjust|set|went|grew|rotat|tun|"
                r"tighten|loosen|extend|shorten|extended|pinn|doubl|halv)")
_EN_FROM_TO = re.compile(
    rf"^(?P<pre>.*?\b{_CHANGE_VERB}\w*\b.*?)\bfrom\s+(?P<old>.+?)\s+(?:to|→|->)\s+"
    r"(?P<new>`[^`]+`|[^\s,;:()]+(?:\s?(?:gb|mb|kb|ms|%|workers?))?)", re.I)
#: "Bumped `max_connections` on staging to 200", "API SLO tightened to 99.9%": a change
#: without the old value.
_EN_TO = re.compile(
    rf"^(?P<pre>.*?\b{_CHANGE_VERB}\w*\b.*?)\s+to\s+"
    r"(?P<new>`[^`]+`|\d[\d.:,]*\s?(?:%|gb|mb|kb|ms|s|days?|hours?|minutes?|workers?)?"
    r"|[A-Z][\w.-]+(?:\s[A-Z][\w.-]+)?)(?=[\s,;:.()]|$)", re.I)
#: "Jonas leads the mobile team": who holds a role (the attribute "mobile team lead").
_EN_LEADS = re.compile(r"^(?P<val>[A-Z][\w-]+)\s+(?:leads|heads)\s+"
                       r"(?:the\s+)?(?P<subj>[a-z][\w -]{2,30}?)(?:[:,;.(]|\s+\(|$)")
#: "应用日志保留 7 天": an amount stated after its attribute, in Chinese.
_ZH_AMOUNT = re.compile(rf"(?P<subj>[{_CJK}]{{2,10}})\s*(?P<val>\d+(?:\.\d+)?)\s*"
                        r"(?=天|个|小时|分钟|秒|台|人|次|GB|MB|%|元|欧元|美元)")
_ARROW = re.compile(r"^(?P<pre>.*?)(?P<old>[^\s→]+)\s*(?:→|->)\s*(?P<new>[^\s,;:()，。]+)")
_EN_IS = re.compile(
    r"^(?P<subj>[^:;,.]{2,60}?)\s+(?:is|are|was set to|is set to|set to|are set to|runs at|"
    r"run at|starts at|runs every|costs|runs on|run on|uses|use|are kept for|is kept for)\s+"
    r"(?P<now>now\s+)?(?:set to\s+|at\s+|running\s+|on\s+|kept for\s+)?"
    r"(?P<val>(?:[^,;:(]|(?<=\d):(?=\d))+)",
    re.I)
_EN_NOW_OUR = re.compile(
    r"^(?P<val>`[^`]+`|[A-Z][\w-]+)\s+(?:is|are)\s+now\s+(?:our|the)\s+"
    r"(?:only\s+|new\s+|main\s+|current\s+|sole\s+)?(?P<subj>[a-z][\w -]{2,40}?)"
    r"(?:[:,;.(]|\s+(?:for|and|because|since|after)\b|$)")
#: "We're on Woodpecker CI now": the attribute ("CI") sits after the value's name.
_EN_ON_NAME = re.compile(
    r"^[Ww]e(?:['’]re| are| use| run)\s+(?:now\s+)?(?:on|using|with|running)?\s*"
    r"(?P<val>[A-Z][\w-]+(?:\s[A-Z][a-z][\w-]*)?)\s+(?P<subj>[A-Z]{2,}|[a-z][a-z-]{2,})"
    r"(?P<now>\s+(?:now|these days)\b|\s+since today\b)")
_COLON = re.compile(r"^(?P<subj>[^:：]{2,60}?)\s*(?:：|:(?!\d))\s*(?P<val>[^,;:(，；（：]+)")
_COUNT = re.compile(r"\b(?P<num>\d[\d,]*)\s+(?P<noun>[a-z][a-z-]+s)\b")
_VERSION = re.compile(r"\b(?P<name>[A-Z][A-Za-z]+)\s+(?P<ver>\d+\.\d+(?:\.\d+)?)\b")
_NO_LONGER = re.compile(
    r"^(?P<subj>.*?)\bno longer\s+(?:use[sd]?\s+|run[s]?\s+(?:on\s+)?|on\s+|at\s+|with\s+)?"
    r"(?P<old>`[^`]+`|[A-Z][\w-]+|\d[\w.:]*)")
_ZH_VERB = r"(?:改成|改为|改到|换成|换为|调到|调成|调整为|调整到|升级到|升到|降到|变成|切换到|切到)"
_ZH_FROM_TO = re.compile(rf"(?P<pre>[^，。；]*?)从\s*(?P<old>`[^`]+`|[^，。；\s]+?)\s*{_ZH_VERB}\s*"
                         r"(?P<new>`[^`]+`|[^\s，。,；;（(]+)")
_ZH_VERB_RE = re.compile(_ZH_VERB)
_ZH_TO = re.compile(rf"(?P<subj>[^，。；,;]*?)\s*{_ZH_VERB}\s*(?P<new>`[^`]+`|[^\s，。,；;（(]+)")
_ZH_IS = re.compile(
    rf"(?P<subj>[{_CJK}A-Za-z`_ ]{{2,16}}?)\s*(?P<now>现在是|目前是|现为|现在为|是|定在|定为|设为|"
    r"设置为|设在)\s*"
    r"(?P<val>`[^`]+`|[^\s，。,；;（(]+)")
_ZH_CUE = re.compile(r"从今天起|从今晚开始|从今天开始|从本周起|从下周起|现在|目前|今后|以后")
_EN_CUE = re.compile(r"\b(?:now|currently|from now on|as of|starting|switched|moved to)\b", re.I)


def _clean(text: str) -> str:
    t = _BULLET.sub("", text.strip())
    t = t.replace("**", "").replace("__", "")
    return _TIME_PREFIX.sub("", t).strip()


def _clause_subject(pre: str) -> str:
    """The last clause of the words before a change: what the change is about."""
    return re.split(r"[，。；;:,]|(?:\b(?:and|but|so|then|after|because)\b)", pre)[-1]


def _fact(st: Statement, subj_text: str, values: frozenset[str], old: frozenset[str],
          explicit: bool, kind: str, keys_from: str = "") -> Fact | None:
    subj_text = re.sub(r"^[把将给]", "", _ZH_CUE.sub("", subj_text).strip())
    if kind == "attr" and _DONE.match(subj_text):
        return None
    subject = subject_words(subj_text)
    if kind == "change":  # the verb of the change is not the attribute's name
        subject = frozenset(w for w in subject if not re.match(_CHANGE_VERB, w))
    keys = _keys(keys_from or subj_text)
    if not values or (not subject and not keys):
        return None
    if any(g in subj_text for g in _GENERIC_ZH) or subject & _GENERIC:
        return None
    if len(subject) > 8:  # a sentence, not an attribute's name
        return None
    return Fact(st, subject | frozenset(_stem(p) for k in keys for p in k.split("_") if p),
                keys, values, old, explicit, kind)


def facts_of(st: Statement) -> list[Fact]:
    """The facts one statement states (none, one, or one per pattern that finds one)."""
    t = _clean(st.text)
    if not t or t.startswith("#") or len(t) > 400:
        return []
    codes = frozenset(c.lower() for c in re.findall(r"`([^`]{3,60})`", t))
    out = [f for f in (*_changes(st, t), *_stated(st, t)) if f is not None]
    return [replace(f, codes=codes) for f in out]


def _changes(st: Statement, t: str) -> list[Fact | None]:
    """Explicit changes: "from X to Y", "X → Y", "no longer X", "从 X 改成 Y", "改到 Y"."""
    out: list[Fact | None] = []
    low = t.lower()
    zh = bool(_ZH_VERB_RE.search(t))  # each pattern only where its words are (a sync's cost)
    for rx, word in ((_EN_FROM_TO, "from " in low), (_ZH_FROM_TO, zh and "从" in t)):
        m = rx.search(t) if word else None
        if m:
            out.append(_change(st, m.group("pre"), m.group("new"), m.group("old")))
    m = _EN_TO.search(t) if " to " in low and not out else None
    if m and not out and " from " not in m.group("pre"):
        out.append(_change(st, m.group("pre"), m.group("new")))
    m = _ARROW.search(t) if "→" in t or "->" in t else None
    if m and not out and (_NUM.search(m.group("old")) or m.group("old")[:1].isupper()):
        out.append(_change(st, m.group("pre"), m.group("new"), m.group("old")))
    m = _NO_LONGER.search(t) if "no longer" in low else None
    if m:
        out.append(_fact(st, m.group("subj"), frozenset({"(none)"}),
                         value_tokens(m.group("old")), True, "change", m.group("subj")))
    for m in _ZH_TO.finditer(t) if zh else ():
        if "从" not in _ZH_CUE.sub("", m.group("subj")):  # not "从 X 改成 Y" again
            out.append(_change(st, m.group("subj"), m.group("new")))
    return out


def _change(st: Statement, pre: str, new: str, old: str | None = None) -> Fact | None:
    """An explicit change to ``new`` (from ``old``) of what the last clause of ``pre`` names,
    the identifiers of the whole of ``pre`` its keys."""
    return _fact(st, _clause_subject(pre), value_tokens(new),
                 value_tokens(old) if old is not None else frozenset(), True, "change", pre)


def _stated(st: Statement, t: str) -> list[Fact]:
    """Facts stated without a change word: "X is (now) V", "V is now our X", "X: V", counts
    and named versions."""
    out: list[Fact] = []
    cue = bool(_EN_CUE.search(t) or _ZH_CUE.search(t))
    # "V is now our X" and "we're on V X now" (with "now" only: precision first) are current;
    # "V leads X" (the attribute "X lead") only with a cue
    for rx, suffix in ((_EN_NOW_OUR, ""), (_EN_ON_NAME, ""), (_EN_LEADS, " lead")):
        m = rx.match(t)
        if m and not (rx is _EN_ON_NAME and m.group("subj").lower() in _STOP):
            sure = cue or rx is not _EN_LEADS
            f = _fact(st, m.group("subj") + suffix, value_tokens(m.group("val")), frozenset(),
                      sure, "attr" if sure else "passive")
            return [f] if f else []
    m = _ZH_AMOUNT.search(t)
    if m and not _ZH_FROM_TO.search(t):
        f = _fact(st, m.group("subj"), frozenset({m.group("val")}), frozenset(), cue,
                  "attr" if cue else "passive")
        if f:
            return [f]
    clause = re.split(r"[,;:(]|\s(?:after|for|because|since|with)\s", t)[0]
    m = _COUNT.search(clause)
    if m and cue:  # "Now 38 retailers tracked", "44 retailers tracked now"
        rest = clause[: m.start()] + " " + m.group("noun") + " " + clause[m.end():]
        f = _fact(st, rest, frozenset({m.group("num").replace(",", "")}), frozenset(), True,
                  "count")
        if f:
            return [f]
    for rx in (_EN_IS, _ZH_IS, _COLON):
        m = rx.search(t) if rx is _ZH_IS else rx.match(t)
        if m:
            # the value, not why or since when: "4gb after the Sunday peak" → "4gb"
            val = re.split(r"\s(?:after|because|since|for|when|with|so|until|as|but)\b",
                           m.group("val"))[0]
            verb = (m.groupdict().get("now") or "").strip()
            now = bool(verb) and verb not in ("是", "定在", "定为", "设为", "设置为", "设在")
            if (_EVENT_VALUE.search(val) and verb[:1] not in ("定", "设")) or len(
                    val.split()) > 6:
                continue  # an event, or a sentence rather than a value
            # "…是…" is everywhere in Chinese prose: with another value than a code or a
            # number, and without 现在/目前/从今天起, a statement that only a later explicit
            # change supersedes ("短信验证码用的是阿里云短信服务")
            plain = (rx is _ZH_IS and verb == "是" and not (now or cue)
                     and not re.match(r"`|\d", val.strip()))
            f = _fact(st, _clause_subject(m.group("subj")), value_tokens(val), frozenset(),
                      now or cue, "passive" if plain else "attr", m.group("subj"))
            if f:
                out.append(f)
                break
    for m in _VERSION.finditer(t):
        out.append(Fact(st, frozenset({m.group("name").lower()}), frozenset(),
                        frozenset({m.group("ver")}), frozenset(),
                        bool(cue or re.search(r"\b(?:running|upgraded|runs)\b", t)), "version"))
    return out


# --------------------------------------------------------------------------- matching

def _same_subject(new: Fact, old: Fact) -> bool:
    if new.kind == "version" or old.kind == "version":
        if new.kind == "change" and new.old & old.values:  # "Node 18.19 → 20.11"
            return bool(new.subject & old.subject)
        return new.kind == old.kind and new.subject == old.subject
    if new.keys & old.keys:
        return True
    shared = new.subject & old.subject
    if not shared:
        return False
    small = min(len(new.subject), len(old.subject))
    if not new.explicit:  # a plain restatement: the very same attribute's name
        return new.subject == old.subject and new.kind == old.kind != "passive"
    if new.old and _names_old(new, old):
        return len(shared) / small >= 0.5 or len(shared) >= 2
    return 3 * len(shared) >= 2 * small and len(shared) >= min(2, small)


def _names_old(new: Fact, old: Fact) -> bool:
    """``new`` names ``old``'s value as the one it replaces (a Chinese name may sit inside a
    longer run: "阿里云" in "阿里云短信服务")."""
    return bool(new.old & old.values) or any(
        len(o) >= 2 and _CJK_RUN.fullmatch(o) and o in v for o in new.old for v in old.values)


def _later(new: Fact, old: Fact) -> bool:
    """``new`` was written after ``old``: a later day, or further down the same file that day
    (then only an explicit change); an undated file (mtime) after a diary only explicitly."""
    a, b = new.stmt, old.stmt
    if a.day != b.day:
        return a.day > b.day and (a.dated or not b.dated or new.explicit)
    return a.path == b.path and a.line > b.line and new.kind == "change"


def supersedes(new: Fact, old: Fact) -> bool:
    """Whether ``new`` (a later statement) replaces ``old``'s value."""
    if (new.stmt.path, new.stmt.line) == (old.stmt.path, old.stmt.line):
        return False
    if not old.values or old.values == {"(none)"} or not _later(new, old):
        return False
    if new.old and new.old & old.codes and not new.values & old.codes:
        return True  # the very code it replaces: "从 `0 2 * * *` 改成 `30 3 * * *`"
    if not _same_subject(new, old):
        return False
    if new.values & old.values and new.values != {"(none)"}:
        return False
    if new.values != {"(none)"} and _numeric(new.values) != _numeric(old.values):
        return False
    return not (new.kind == "version" and not new.explicit)


#: How many of a word's latest facts a new fact is compared with (see :func:`detect`).
TERM_WINDOW = 48


def detect(statements: Iterable[Statement]) -> list[Supersession]:
    """Every statement that a later one supersedes, each with the first that did.

    Facts are taken in time order (day, then path and line). When a new fact supersedes an old
    one it joins the old one's attribute, and also supersedes that attribute's newest value so
    far (a chain "Lumen" → "from Lumen to Netloom" → "Sable is now our proxy vendor": the
    second line's subject, "account-free crawl", is not the third's, but the attribute is).
    Only facts that share a subject word, an identifier or a code are compared, and of a word
    only its latest :data:`TERM_WINDOW` facts (linear in the facts, not quadratic).
    """
    facts = sorted((f for st in statements for f in facts_of(st)),
                   key=lambda f: (f.stmt.day, f.stmt.path, f.stmt.line))
    # each word's latest facts only: a word that many facts share names no one attribute, and
    # comparing every pair of its facts made a long diary of look-alike lines quadratic
    by_term: dict[str, deque[int]] = {}
    group: list[int] = []  # fact index → its attribute's id
    head: dict[int, int] = {}  # attribute → its newest fact
    out: dict[tuple[str, int], Supersession] = {}

    def mark(old: Fact, new: Fact) -> None:
        key = (old.stmt.path, old.stmt.line)
        if key not in out and (new.stmt.path, new.stmt.line) != key:
            label = " ".join(sorted(old.subject | new.subject))[:200]
            out[key] = Supersession(key[0], key[1], new.stmt.path, new.stmt.line, label)

    for i, new in enumerate(facts):
        terms = new.subject | new.keys | new.old
        seen = sorted({j for w in terms for j in by_term.get(w, ())})
        group.append(i)
        for j in seen:
            old = facts[j]
            if not supersedes(new, old):
                continue
            mark(old, new)
            g = group[j]
            h = facts[head.get(g, j)]
            if h is not old and not (h.values & new.values) and _later(new, h):
                mark(h, new)
            group[i] = g
        head[group[i]] = i
        for w in new.subject | new.keys | new.values | new.codes:
            by_term.setdefault(w, deque(maxlen=TERM_WINDOW)).append(i)
    return sorted(out.values(), key=lambda s: (s.old_path, s.old_line))


# --------------------------------------------------------------------------- statements

def statement_day(path: str, text: str, mtime_ms: int) -> tuple[str, bool]:
    """When a line was written: its file's date (a diary), else a date in the line, else the
    file's mtime (``dated`` False)."""
    d = path_date(path)
    if d is not None:
        return d.isoformat(), True
    m = _LINE_DATE.search(text)
    if m:
        return m.group(0), True
    return day_of(mtime_ms) if mtime_ms > 0 else "0000-00-00", False


def statements_of_chunks(chunks: Iterable[tuple[str, str, int, str, int]]
                         ) -> list[Statement]:
    """Lines of ``(path, source, start_line, text, mtime_ms)`` chunks as statements, each
    (path, line) once. A Markdown chunk's text is its lines; a transcript's chunk is one
    message (its JSONL line), whose first line stands for it."""
    seen: set[tuple[str, int]] = set()
    out: list[Statement] = []
    for path, source, start, text, mtime in chunks:
        lines = text.split("\n")
        if source == "sessions":
            lines = [" ".join(text.split())[:400]]
        for i, line in enumerate(lines):
            key = (path, start + i)
            if key in seen or not line.strip():
                continue
            seen.add(key)
            day, dated = statement_day(path, line, mtime)
            out.append(Statement(path, start + i, day, line, dated))
    return out


@dataclass(frozen=True)
class ChunkMarks:
    """The supersession facts of a set of chunks, by chunk id (what fusion reads)."""

    #: a chunk covering a statement a later line superseded → that line's citation
    superseded: dict[str, str]
    #: the chunks holding a current statement (one that superseded another and still stands)
    current: frozenset[str]
    #: each marked chunk's attributes: the subject words of its supersessions
    subjects: dict[str, tuple[frozenset[str], ...]]


def chunk_marks(rows: Sequence[Supersession], chunks: Iterable[tuple[str, str, int, int]]
                ) -> ChunkMarks:
    """The :class:`ChunkMarks` of ``(id, path, start_line, end_line)`` chunks.

    A chunk holding both a superseded and a current statement (a diary section that states
    one value and changes another) is only current: a hit on it may be a hit on its current
    statement, and a wrong "superseded" costs more than a missed one.
    """
    old_by_path: dict[str, list[Supersession]] = {}
    new_by_path: dict[str, list[Supersession]] = {}
    olds = {(r.old_path, r.old_line) for r in rows}
    for r in rows:
        old_by_path.setdefault(r.old_path, []).append(r)
        if (r.new_path, r.new_line) not in olds:
            new_by_path.setdefault(r.new_path, []).append(r)
    superseded: dict[str, str] = {}
    current: set[str] = set()
    subjects: dict[str, tuple[frozenset[str], ...]] = {}
    for cid, path, start, end in chunks:
        heads = [r for r in new_by_path.get(path, ()) if start <= r.new_line <= end]
        olds_in = [r for r in old_by_path.get(path, ()) if start <= r.old_line <= end]
        if heads:
            current.add(cid)
        elif olds_in:
            superseded[cid] = olds_in[0].new_citation
        if heads or olds_in:
            subjects[cid] = tuple(frozenset(r.subject.split()) for r in heads or olds_in)
    return ChunkMarks(superseded, frozenset(current), subjects)


#: "what", "which", "who", "how many", "when", "多少", "哪", "谁", "几": a question after a value.
_VALUE_QUESTION = re.compile(
    r"\b(?:what|which|who|whom|whose|how (?:many|much|big|large|long|often|high|low)|when|"
    r"where)\b|多少|哪|谁|几|什么", re.I)


def asks_about(query: str, subjects: Sequence[frozenset[str]]) -> bool:
    """Whether ``query`` asks for the value of one of these attributes: a question after a
    value whose words hold at least two of an attribute's subject words (or all of a shorter
    one's)."""
    if not _VALUE_QUESTION.search(query):
        return False
    words = subject_words(query)
    return any(len(words & s) >= min(2, len(s)) for s in subjects)


# --------------------------------------------------------------------------- the question's time

_PAST = re.compile(
    r"\b(?:before|previously|formerly|originally|initially|used to|earlier|at first|at the "
    r"start|back in|back when|in the past|last (?:year|month|spring|summer|autumn|fall|winter)"
    r"|(?:what|which|who|how \w+) (?:was|were|did)|in (?:january|february|march|april|may|june|"
    r"july|august|september|october|november|december)|(?:jan|feb|mar|apr|jun|jul|aug|sep|sept"
    r"|oct|nov|dec)\b|first|old|older|original|until|prior)\b"
    r"|以前|之前|原来|原先|过去|当初|最初|一开始|起初|曾经|早先|\d{1,2}\s*月|\d{4}-\d{2}", re.I)
_PRESENT = re.compile(
    r"\b(?:now|currently|current|latest|these days|at the moment|right now|today|nowadays|"
    r"still|at present|newest|most recent)\b|现在|目前|当前|如今|最新|眼下|这几天", re.I)


def time_focus(query: str) -> str:
    """What time a question asks about: ``past`` ("before", "in April", "used to", "以前",
    "之前", "原来"…, and no present cue), else ``now`` ("now", "currently", "latest", "现在",
    "目前"…, or no time cue at all: a question about a fact asks for its value today)."""
    if _PRESENT.search(query):
        return "now"
    return "past" if _PAST.search(query) else "now"

#!/usr/bin/env python3
"""Regenerate the chunker input fixtures in chunk_inputs/ (stdlib only, exact bytes).

All inputs are written as UTF-8 with newline="" so "\\r\\n" and the presence/absence of a trailing
newline are preserved exactly. Re-running this script must reproduce byte-identical files
(the goldens in chunk/ were recorded from these bytes; MANIFEST.json stores each input's sha256).
"""
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chunk_inputs")
os.makedirs(HERE, exist_ok=True)


def write(name, text):
    data = text.encode("utf-8")  # never contains lone surrogates (Python would refuse)
    assert len(data) < 40 * 1024, (name, len(data))
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def utf16len(s):
    return sum(2 if ord(c) > 0xFFFF else 1 for c in s)


# ---- spec §1.4 examples -------------------------------------------------------------------------
lines60 = [("line %02d " % n + "x" * 51)[:59] for n in range(1, 61)]
write("ascii_60x59_nl.md", "".join(l + "\n" for l in lines60))
write("ascii_60x59_nonl.md", "\n".join(lines60))

words = "the crawler injected an expired cookie into every request header so the portal answered 401".split()
s, i = [], 0
while len(" ".join(s)) < 4000:
    s.append(words[i % len(words)] + str(i))
    i += 1
line4000 = " ".join(s)[:4000]
assert len(line4000) == 4000
write("line4000_nonl.md", line4000)
write("line4000_nl.md", line4000 + "\n")

cjk_base = "凌晨两点开始所有抓取任务都返回过期错误原因是注入模块从环境变量读取旧的值密钥更新后容器没有重启导致过期的值一直被注入到请求头里"
cjk1000 = (cjk_base * 20)[:1000]
assert len(cjk1000) == 1000
write("cjk_1000_nonl.md", cjk1000)
write("cjk_1000_nl.md", cjk1000 + "\n")

# ---- small edge cases ---------------------------------------------------------------------------
write("empty.md", "")
write("a_b_nl.md", "a\nb\n")
write("single_line_nonl.md", "hello")
write("only_newlines.md", "\n\n\n")
write("whitespace_only.md", "   \n\t\n  \n")

# CRLF: 40 lines of 58 chars + "\r\n"  (the "\r" stays in the line and weighs 1)
crlf_lines = [("crlf line %02d " % n + "y" * 60)[:58] for n in range(1, 41)]
write("crlf_40.md", "".join(l + "\r\n" for l in crlf_lines))
# mixed endings incl. a lone "\r" (not a line break for the chunker)
write("mixed_endings.md", "one\r\ntwo\nthree\rstill three\r\n\r\nsix\n")

# BOM at the start (Node's readFileSync(..., "utf-8") keeps U+FEFF in the string)
write("bom.md", "\ufeff# Title with BOM\n\nbody line\n")

# ---- surrogate pairs / astral characters around the 1600-unit coarse cut ------------------------
# emoji occupies UTF-16 units 1599..1600 -> the coarse slice [0:1600] ends with a lone high surrogate
write("emoji_straddle_1600.md", "a" * 1599 + "\U0001F600" + "b" * 400 + "\n")
# emoji exactly at 1598..1599 (fits in the first slice) for contrast
write("emoji_fit_1600.md", "a" * 1598 + "\U0001F600" + "b" * 400 + "\n")
# a line made only of emoji (weight 2 each, no CJK adjustment): 1000 emoji = 2000 units
write("emoji_only_1000.md", "\U0001F600\U0001F680" * 500 + "\n")
# CJK-heavy line where the fine pass (step = tokens = 400 units) would cut an emoji in half
write("cjk_emoji_fine_cut.md", "中" * 399 + "\U0001F600" + "文" * 600 + "\n")

# astral CJK (Extension B, U+20000..): 2 UTF-16 units, weight 4 each
astral = "".join(chr(0x20000 + k * 37) for k in range(900))
write("astral_cjk_900.md", astral + "\n")
# same, shifted by one ASCII char so the 1600-unit coarse cut splits a pair
write("astral_cjk_900_shift1.md", "x" + astral + "\n")
# Extension G (U+30000+) is NOT in the 2026.5.20 class -> weight 2 each
write("ext_g_900.md", "".join(chr(0x30000 + k) for k in range(900)) + "\n")

# ---- character classes -------------------------------------------------------------------------
# fullwidth punctuation (weight 1 in 2026.5.20): 1800 chars on one line, then mixed with CJK
fw = "，：？！"
write("fullwidth_punct.md", (fw * 450) + "\n" + ("好" + fw) * 120 + "\n" + "ＡＢＣ（）￥" * 100 + "\n")
# Hangul syllables
hangul = "쿠키 주입 버그를 수정했습니다 세션 만료 오류가 발생하면 다시 로그인합니다 "
write("hangul.md", "# 한국어 메모\n\n" + (hangul * 30).strip() + "\n" + "\n".join(f"- 항목 {n}: {hangul.strip()}" for n in range(1, 21)) + "\n")
# kana
kana = "クッキーの注入バグを修正しました。ひらがなとカタカナのテストです。"
write("kana.md", "# 日本語メモ\n" + (kana * 40) + "\n" + "\n".join(f"・{kana}{n}" for n in range(1, 25)) + "\n")
# range boundaries: one line of 450 copies per code point; weight 4 => fine pass, weight 1 => coarse
boundary_cps = [0x2E7F, 0x2E80, 0x3000, 0x3040, 0x9FFF, 0xA000, 0xA4FF, 0xA500, 0xABFF, 0xAC00, 0xD7AF,
                0xD7B0, 0xF8FF, 0xF900, 0xFAFF, 0xFB00, 0xFF01, 0xFFE0, 0x1100]
write("class_boundaries.md", "\n".join(chr(cp) * 450 for cp in boundary_cps) + "\n")

# ---- mixed CJK / Latin paragraph (~3000 chars over several lines) ------------------------------
mixed_sents = [
    "今天排查了 crawler-service 的 COOKIE_EXPIRED 问题，根因是 Secret 轮换后 Pod 没有重启。",
    "We rotated the Vault secret at 02:00 UTC but the CronJob kept the old env var.",
    "修复方案：启动时从 Vault 读取 Cookie，收到 HTTP 401 时自动刷新一次，最多重试 3 次。",
    "Alice reviewed the patch; Bob will watch the nightly run on 2026-07-10.",
    "另外把 Helm chart 升级到 1.8.2，namespace 仍然是 crawler-prod。",
]
para_lines, total, k = [], 0, 0
while total < 3000:
    line = " ".join(mixed_sents[(k + j) % 5] for j in range(3))
    para_lines.append(line)
    total += len(line) + 1
    k += 1
write("mixed_cjk_latin_3000.md", "\n".join(para_lines) + "\n")

# ---- markdown document (~5000 chars) with headings and bullets ---------------------------------
md = ["# Ops handbook: crawler-service", "", "Owner: Alice. On call this month: Bob.", ""]
topics = ["Authentication", "Scheduling", "Storage", "Alerting", "Deployment"]
for t_i, t in enumerate(topics):
    md.append(f"## {t}")
    md.append("")
    md.append(f"This section covers {t.lower()} for the crawler. Keep it short and link runbooks where possible.")
    md.append("")
    for b in range(1, 6):
        md.append(f"- {t} rule {b}: check the {t.lower()} dashboard, compare against baseline #{t_i * 10 + b}, "
                  f"and escalate to the owner if the error budget drops below {b * 5}%.")
    md.append("")
    md.append(f"### {t} notes")
    md.append(f"  1. Nested item for {t.lower()}: remember `kubectl -n crawler-prod get pods`.")
    md.append(f"  2. 中文备注：{t} 相关的问题先看监控面板。")
    md.append("")
md_text = "\n".join(md) + "\n"
write("markdown_5000.md", md_text)

# ---- exact-length lines ------------------------------------------------------------------------
write("line_1600.md", "z" * 1600 + "\n")
write("line_1601.md", "z" * 1601 + "\n")
write("line_1599_then_short.md", "z" * 1599 + "\nshort\n")
write("line_3200_nonl.md", "q" * 3200)
# CJK weighted exactly at the limit: 400 CJK = weight 1600 (not > maxChars -> no fine pass), 401 -> fine pass
write("cjk_400.md", "字" * 400 + "\n" + "字" * 401 + "\n")

# ---- medium file for option variants -----------------------------------------------------------
medium = []
for n in range(1, 41):
    medium.append(f"Entry {n:02d}: the portal returned COOKIE_EXPIRED at step {n}; refreshed token and retried.")
    if n % 7 == 0:
        medium.append("")
        medium.append(f"## Checkpoint {n // 7}")
write("medium_notes.md", "\n".join(medium) + "\n")

if __name__ == "__main__":
    for f in sorted(os.listdir(HERE)):
        p = os.path.join(HERE, f)
        t = open(p, "rb").read().decode("utf-8")
        print(f"{f:32s} {os.path.getsize(p):6d} bytes {utf16len(t):6d} utf16")

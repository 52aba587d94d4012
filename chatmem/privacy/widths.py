"""Full-width letters, digits and symbols read as their ASCII forms, for finding details.

A Chinese or Japanese keyboard types ｈｕｎｔｅｒ２ and １２３４ as readily as hunter2 and
1234: the detectors of chatmem.privacy.sensitive read a text with these folded (NFKC, one
character for one, so a finding's positions are the original text's and its marker covers
the characters as they were typed). Punctuation that ends or links a clause in Chinese
(，：；！？（）“”…) is not folded: the Chinese rules read it as the end of a value, and
"密码：ｓｕｎｎｙ２０２４，门禁…" must not become one value "sunny2024,门禁".
"""

from __future__ import annotations

from chatmem.text import FULL_WIDTH

_CLAUSE_MARKS = frozenset("！＂＇（），．：；？［］｛｝｀｜＼＜＞")
_FOLD = {code: ascii for code, ascii in FULL_WIDTH.items() if chr(code) not in _CLAUSE_MARKS}


def folded(text: str) -> str:
    """`text` with full-width letters, digits and value symbols (＃＠－＿…) in ASCII form:
    as long as `text`, each character where it was."""
    if text.isascii():
        return text
    return text.translate(_FOLD)

"""How a secret is named, as regular-expression sources: the words, and how a name reaches
its value (chatmem.privacy.sensitive, credentials and secret_guard build their patterns
from them).

People rarely say "password". They name a credential in one of a few ways, and
each way is a list here, so a new phrasing is a new word in a list, not a new rule:

- a credential noun on its own: password, passcode, passkey, PIN, combination,
  code word, network key, 口令, 暗号, 开锁码 (SECRET_WORDS, CODE_WORDS, *_ZH);
- the thing it opens and a generic noun: "Wi-Fi key", "lockbox combo", "phone's
  unlock code", "garage keypad code", 保险箱的组合, 无线网的钥匙 (THINGS with
  THING_NOUNS; THINGS_ZH with THING_NOUNS_ZH);
- a generic noun, then the thing it opens: "the code to the back door is 8842",
  "the combination to the safe in the study is …" (GENERIC_NOUNS, then THINGS);
- the thing alone, for the few things whose "is" can only be a key: "the Wi-Fi
  for guests is Sunflower2024!", 门禁是2580 (BARE_THINGS, BARE_THINGS_ZH), unless
  the value is shaped like a network's name (NETWORK_NAME);
- what it does: "the side door opens with 7781", "unlock the tablet with
  192837", "punch in 4471" to get into the building, 进门按4471#, 用lantern88连
  无线网 (OPENS, USES, KEYS_IN; their Chinese lists).

A harmless word before a code word makes it harmless ("model code", "promo
code", "area code": HARMLESS_CODES).
"""

from __future__ import annotations

# ASCII word edges: \b counts CJK as letters ("密码是abc" would hide the value).
WB = r"(?<![A-Za-z])"
WA = r"(?![A-Za-z])"
# A word that names the detail, then "is", ":", "是"... and the detail itself. Between the
# word and the link a short aside may stand: "the PIN for my SIM card is 1207", "the CVV
# on the back is 417", "the code they texted me is 662019", "the passcode, for the kids,".
# A link word may take a colon after it: "the password is: x", 密码是：x, 验证码为：x.
LINK = r"\s*(?:(?:is|was)\s*[:：]?|=|:|：)\s*"
ASIDE = (r"(?:\s+(?:for|of|on|to|at|from|in|with|they|we|you|i|that|which)"
          r"(?=\s)[^.,;:!?。，；：\n\"“]{1,30}?)?(?:,[^.,;:!?\n]{1,30},)?")
LINK_WORDS_ZH = r"(?:是|为|為)\s*[:：]?|[:：=]"
"""How a Chinese name reaches a value said after it: 是, 为, a colon, or a word then a colon."""
# Japanese links (パスワードは…, 暗証番号が…) only before a value a Chinese label takes
# (ASCII or quoted), never before words: "パスワードは変更しました" says none.
LINK_ZH = rf"\s*(?:{LINK_WORDS_ZH}|(?:は|が)\s*[:：]?)?\s*"
# A quoted value may hold spaces ("open sesame"); a bare one ends at a space or a sentence end.
VALUE = (r"(?:[\"“'‘「](?P<quoted>[^\"”'’」\n]{3,128})[\"”'’」]"
          r"|(?P<value>[^\s\"'“”‘’「」，。！？；、,;]{3,128}?)"
          r"(?=[\s，。！？；、,;)]|[.!?](?:\s|$)|$))")
# After a Chinese label a value is ASCII (Hua8mei2024): "密码每90天换一次" names no secret.
VALUE_ZH = (r"(?:[\"“'‘「](?P<quoted_zh>[^\"”'’」\n]{3,128})[\"”'’」]"
             r"|(?P<value_zh>[!-~]{3,128}?)(?=[^!-~]|[.](?:\s|$)|$))")
DATE = r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}"
"""A date, never a secret's value."""
CLAUSE_END = r"[.!?;。！？；\n](?:\s|$)|[。！？；\n]"

SECRET_WORDS = (
    r"password|passwd|passcode|pass code|passkey|pass key|pwd"
    r"|secret key|client secret|private key|api[ _-]?key|access[ _-]?key"
    r"|(?:access|auth|bearer|api|refresh|session) token"
    r"|code ?word|secret word|safe ?word|security key|pre-shared key|psk"
    r"|(?:network|wireless|wi-?fi|wlan|wpa[23]?|wep|hotspot|router|modem)(?:'s)? (?:key|pass)"
)
"""Nouns that name a secret, whatever it looks like (letters alone too)."""
PHRASE_WORDS = r"passphrase|pass phrase|seed phrase|recovery phrase|backup phrase|mnemonic"
THINGS = (
    r"wi-?fi|wlan|wireless|network|hotspot|router|modem|internet|broadband"
    r"|(?:front |back |side |main |garden |patio |cellar )?door|gate|garage|building|entrance"
    r"|entry|lobby|apartment|flat|house|home|office|intercom|buzzer|elevator|lift"
    r"|(?:bike |bicycle )?lock|padlock|lockbox|key ?box|key safe|locker|safe|vault|cabinet"
    r"|mailbox|storage|unit|shed|alarm|keypad|panel"
    r"|phone|iphone|tablet|ipad|laptop|computer|pc|mac|screen|device|sim|atm"
    r"|bank card|debit card|voicemail|account|e-?mail|login|sign-?in|admin"
)
"""What a credential opens."""
THING_NOUNS = (
    r"code|pin(?: code| number)?|combo|combination|passcode|pass code|keypad code"
    r"|unlock code|unlock pin|access code|entry code|disarm code|key ?code"
)
"""What a credential is called after the thing it opens ("lockbox combo")."""
GENERIC_NOUNS = r"code|pin|combo|combination|key|pass"
"""What a credential is called before the thing it opens ("the code to the back door")."""
# "pin" is a verb too: "pin the version", "should I pin psycopg2?", "pin this message" name
# no secret, and as a label they made the next number a PIN. Written "PIN", or after "the",
# "my", "a"..., it is the noun; else the verb when a subject, a modal or "to" is before it
# or an object after it. "pinned", "pinning" are other words already.
PIN_NOUN_AFTER = ("the", "my", "your", "our", "his", "her", "their", "its", "a", "an", "new",
                  "old", "same", "this", "that", "which", "what", "whose")
PIN_VERB_AFTER = ("i", "we", "you", "they", "to", "should", "shall", "can", "could", "would",
                  "will", "must", "might", "may", "please", "let's", "let’s", "don't", "don’t",
                  "never", "always", "just", "also")
PIN_VERB_OBJECTS = r"it|them|this|that|these|those|the|a|an|down|everything|all|both|each|every"
_PIN_NOUN_BEFORE = "|".join(rf"(?<=\b{word} )" for word in PIN_NOUN_AFTER)
_PIN_VERB_BEFORE = "".join(rf"(?<!\b{word} )" for word in PIN_VERB_AFTER)
# The literal first: each look-behind is tried only where "pin" stands, not at every
# character of a text (2-3x the cost of the whole pattern on a long message before).
_PIN_NOUN = (rf"(?=(?i:pin))(?:(?-i:PIN)|(?:{_PIN_NOUN_BEFORE})pin"
             rf"|{_PIN_VERB_BEFORE}pin(?!\s+(?:{PIN_VERB_OBJECTS}){WA}))")
_OTHER_CODE_WORDS = (
    r"security code|verification code|one-time code|otp|cvv2?|cvc"
    r"|combination|combo|keypad|lockbox|key ?box|key safe|padlock|key ?code|unlock code"
    r"|unlock pin|disarm code|access number"
    r"|keypad number|sign-?in (?:code|pin)|login (?:code|pin)"
    r"|(?:locker|door|gate|alarm|safe|entry|keypad|lock|building|access"
    r"|entrance|lockbox|key ?box|key safe|sms|2fa|login|unlock|storage|unit|intercom|buzzer"
    r"|mailbox|padlock|vault|lobby|garage|house|apartment|flat|cabinet|atm) (?:code|pin|combo)"
)
CODE_WORDS = rf"pin(?: code| number)?|{_OTHER_CODE_WORDS}"
"""Nouns that name a code: a credential when its value holds digits (the words, as the
gates read them: patterns take CODE_NAMES)."""
CODE_NAMES = rf"{_PIN_NOUN}(?: code| number)?|{_OTHER_CODE_WORDS}"
"""CODE_WORDS as a pattern: "pin" only where it is the noun."""
BARE_THINGS = r"wi-?fi|wlan|hotspot|guest network|guest wi-?fi"
"""Things whose "is" is a key when the value looks like one ("the Wi-Fi is Sunflower2024!")."""
NETWORK_NAME = (
    r"_|5g|2\.4|wlan|wi-?fi|guest|net|hub|link|router|xfinity|netgear|huawei|ssid|office"
    r"|free|open|public|802\.11|wpa|wep|protected|secured|ghz|mbps|iphone|pixel|galaxy"
    r"|android|phone|'s"
)
"""What a network's name holds and a key seldom does: "Lakehouse_5G", "HomeNet-5G"."""
HARMLESS_CODES = (
    r"model|product|promo|promotion|promotional|discount|coupon|voucher|booking|confirmation"
    r"|reservation|error|status|area|zip|postal|post|country|dialling|dialing|hs|qr|bar"
    r"|dress|source|tracking|reference|ref|colou?r|style|course|class|airport|iata|flight"
    r"|item|part|sku|serial|tax|bank sort|sort|swift|bic|routing"
)
"""Words that make the code after them harmless ("model code A2891", "area code 415")."""
HARMLESS_PASSES = (
    r"boarding|bus|season|day|ski|parking|travel|gym|visitor|press|backstage|hall|rail|train"
    r"|transit|metro|weekly|monthly|annual|museum|festival|free|mountain|guest|all-access"
    r"|event|ticket"
)
"""Words that make the pass after them a ticket ("my boarding pass", "the gym pass")."""
OPENS = r"opens?|opened|unlocks?|unlocked|disarms?|disarmed"
"""`THING … opens with VALUE`."""
TAKES = r"takes|accepts|wants|needs"
"""`THING … takes CODE` ("the gate takes 1379#")."""
USES = (
    r"open|unlock|disarm|get (?:in|into|on|onto)|connect to|connect|join|access"
    r"|log (?:in|into|on|onto)|sign (?:in|into)"
)
"""`USES … THING … with VALUE`."""
KEYS_IN = r"punch(?: in)?|key in|tap in|type(?: in)?|enter|dial in"
"""`KEYS_IN VALUE` in a clause that names a THING or getting in."""

# With the Japanese names of a password and of a PIN or a code, said the same ways.
SECRET_WORDS_ZH = r"支付密码|密码|口令|密钥|私钥|令牌|密令|暗号|パスワード|パスフレーズ|合言葉"
CODE_WORDS_ZH = (
    r"PIN码|验证码|动态码|安全码|校验码|门禁码|开门码|密码锁|开锁码|解锁码|锁屏码|通行码"
    r"|进门码|开柜码|开箱码|取款码|连接码"
    r"|暗証番号|認証コード|認証番号|確認コード|確認番号|セキュリティコード|PINコード|ワンタイムコード"
)
THINGS_ZH = (
    r"门锁|门禁|大门|房门|家门|侧门|后门|前门|单元门|车库门?|保险箱|保险柜|储物柜|柜子|箱子"
    r"|自行车锁|车锁|挂锁|密码锁|手机|电脑|平板|笔记本|ATM|银行卡|无线网络|无线网|无线"
    r"|WiFi|wifi|WIFI|Wi-Fi|wi-fi|网络|热点|路由器|宽带|门|锁"
)
THING_NOUNS_ZH = r"(?:开箱|开门|开锁|开柜|解锁|连接|进门|密码)?(?:组合|钥匙|数字|码|PIN|pin)"
BARE_THINGS_ZH = r"门禁|WiFi|wifi|WIFI|Wi-Fi|wi-fi|无线网|无线|热点"
KEYS_IN_ZH = r"按|输入|输|摁|键入|转到|拨到|调到|对到"
"""`KEYS_IN_ZH VALUE` in a clause naming a door, a lock, a safe or a cabinet."""
OPENED_ZH = r"门|锁|柜|箱|小区|楼"
USES_ZH = r"连接|连上|连|登录|登陆|解锁|打开|开"

NOT_A_SECRET = {
    # "my password is wrong", "the key was reset": words, not secrets.
    "wrong", "correct", "right", "incorrect", "invalid", "expired", "reset", "changed", "new",
    "old", "same", "different", "forgotten", "lost", "missing", "required", "needed", "set",
    "too", "not", "very", "still", "also", "the", "a", "an", "my", "your", "it", "that", "this",
    "for", "and", "but", "to", "of", "in", "on", "with", "manager", "protected", "strong",
    "weak", "long", "short", "what", "which", "please", "empty", "blank", "unknown", "none",
    "null", "secret", "private", "hidden", "safe", "saved", "stored", "encrypted", "valid",
    "due", "case-sensitive", "locked", "blocked", "coming", "next", "below", "above",
    "错误", "正确", "不对", "忘了", "过期", "重置", "什么", "多少",
}
NOT_A_PHRASE = {
    "is", "was", "needs", "must", "should", "has", "had", "have", "can", "will", "would",
    "could", "manager", "generator", "for", "of", "on", "in", "to", "with", "that", "which",
    "you", "i", "we", "it", "and", "or", "but", "too", "again", "please",
}

CHANGED_TO_ZH = r"(?:修改|更改|重置|设置|改|设|换|变)(?:为|為|成)了?"
"""How a password is changed to its value: 密码改为X, 改成了X, 把密码设成X, 换成X."""
OWNERS_ZH = r"我|我们|你|您|他|她|咱们|咱家|家里|公司"
"""Whose secret a value-first sentence names: "X是我的密码"."""
NOT_IN_A_PHRASE_ZH = frozenset("的了吗呢么啊吧呀哦嘛位个字数不没无空错对忘很太要该会能可"
                               "什多少几和与跟同样新旧长短码号")
"""Characters a spoken password in Chinese never holds and a sentence about one does:
"密码是6位数字", "密码是对的", "密码改成什么好", "密码为空"."""

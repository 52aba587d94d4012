"""Chinese names as drift-guard anchors: 我叫王小明, 我妹妹叫李娜, 猫叫“团子”, 王小明先生.

Chinese has no capitals or spaces to mark a name, so a name is taken only where the
sentence introduces one, and cut by what Chinese names look like: a surname (one
character, or two for 欧阳, 司马 ...) and one or two more. Precision over recall: a wrong
anchor pins a fragment ("我去吃" of 妈妈叫我去吃饭) that costs tokens on every turn.
"""

from __future__ import annotations

from chatmem.lazy_patterns import lazy

_PAIRS = ("欧阳司马诸葛上官东方皇甫尉迟公孙慕容令狐司徒夏侯长孙宇文轩辕端木独孤"
          "南宫西门万俟闻人澹台呼延申屠太史钟离赫连拓跋")
_COMPOUND = {_PAIRS[i:i + 2] for i in range(0, len(_PAIRS), 2)}
"""The two-character surnames (欧阳娜娜 is 欧阳 and 娜娜)."""
# The common single surnames. Left out: those far more often a word of their own before
# a name or title (和王先生, 向李老师, 语文老师, 历史老师): they would make 和王 a name.
_SURNAMES = set(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶"
    "程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙陶黎"
    "贺顾毛郝龚邵万钱严覃武戴莫孔汤常温康施牛樊葛邢安齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申"
    "欧耿关兰焦俞左柳甘祝包宁尚符舒阮柯纪梅童凌毕季裴霍涂成苗谷盛曲翁冉骆蓝路游辛靳管柴"
    "蒙鲍华喻祁蒲房滕屈饶解牟艾尤阳穆农司卓古吉缪简车项连芦麦褚娄窦戚岑景党宫费卜冷晏席"
    "卫米柏宗瞿桂佟臧闵苟邬边卞姬师仇栾隋商刁沙荣巫寇桑郎甄丛仲虞敖巩佘池查麻苑迟邝"
)
# Characters that end a name where one is read: particles, pronouns, prepositions and
# the verbs a sentence goes on with (我妹妹叫李娜她..., 妈妈叫我去...). Names rarely hold them.
_NOT_NAME = set(
    "的了是在和与跟及给把被让对向从由为她他它们我你您也就都还又要会吧呢吗啊呀哦嘛很说"
    "叫请问找见到有这那个位谢得着过来去起声不没一人家里回做帮打走跑买吃喝看住带想"
)
# A question where a name would stand (我的猫叫什么？, 我叫什么名字, 名字叫怎么写): no name.
_QUESTION = lazy(r"什么|甚么|啥|谁|哪|几|多少|怎|如何|为何")
_HAN = lazy(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

# People by kin or role: what follows 叫 is their name, so it must look like one.
_ROLES = (
    "妹妹|姐姐|哥哥|弟弟|妈妈|爸爸|母亲|父亲|儿子|女儿|孙子|孙女|老婆|老公|妻子|丈夫|太太|先生"
    "|男朋友|女朋友|男友|女友|未婚夫|未婚妻|同事|朋友|老板|老师|室友|同学|邻居|孩子|宝宝|上司"
    "|领导|经理|医生|律师|爷爷|奶奶|外公|外婆|姥姥|姥爷|叔叔|阿姨|舅舅|舅妈|姑姑|表哥|表姐"
    "|表妹|表弟|堂哥|堂姐|堂妹|堂弟|助理|客户|房东|教练"
)
# Pets have no surname: their name is taken after a possessive (我家的猫叫, 我的狗叫).
_PETS = "猫咪|小猫|猫|狗狗|小狗|狗|兔子|鹦鹉|仓鼠|乌龟|宠物"
_TITLES = ("先生", "女士", "小姐", "老师", "医生", "经理", "律师", "教授", "阿姨")

# Not 叫做: 这种病叫做感冒 names a thing far more often than a person.
_INTRODUCED = lazy(r"我叫|名字是|名字叫|名叫")
_ROLE_CALLED = lazy(rf"(?:{_ROLES})(?:的名字)?叫(?!做)")
_PET_CALLED = lazy(rf"(?:[的家我])(?:{_PETS})(?:的名字)?叫(?!做)")
# A quoted name after 叫 is a name whoever bears it: 猫叫“团子”, 他叫「小马」.
_QUOTED = lazy(
    rf"(?:(?:{_ROLES}|{_PETS}|[他她它我])(?:的名字)?叫做?|名字?(?:是|叫做?))"
    r"[“\"「『‘]([^”\"」』’\s，。！？]{1,8})[”\"」』’]"
)
_TITLED = lazy("|".join(_TITLES))


def _name_char(ch: str) -> bool:
    return bool(_HAN.match(ch)) and ch not in _NOT_NAME


def _surname_length(text: str, at: int) -> int:
    if text[at:at + 2] in _COMPOUND:
        return 2
    return 1 if text[at:at + 1] in _SURNAMES else 0


def _name_at(text: str, at: int, *, need_surname: bool) -> int:
    """The end of the name starting at `at`, or `at` when none starts there."""
    surname = _surname_length(text, at)
    if (need_surname and not surname) or _QUESTION.match(text, at):
        return at
    longest = (surname or 1) + 2
    end = at
    while end < len(text) and end - at < longest and _name_char(text[end]):
        end += 1
    return end if end - at >= 2 else at


def _titled(text: str, title_at: int) -> int:
    """Where the name before a title starts (王小明先生 → 王小明), or -1.

    The longest surname-led candidate wins; its given-name part holds no particle.
    """
    for length in (4, 3, 2):
        start = title_at - length
        if start < 0 or (start and text[start - 1] == text[start]):
            continue  # 谢谢王先生: the second 谢 of 谢谢 is no surname
        surname = _surname_length(text, start)
        given = text[start + surname:title_at]
        if surname and 1 <= len(given) <= 2 and all(_name_char(c) for c in given):
            return start
    if title_at >= 2 and text[title_at - 2:title_at] in _COMPOUND:
        return title_at - 2
    if title_at >= 1 and text[title_at - 1] in _SURNAMES:
        return title_at - 1
    return -1


def chinese_names(text: str) -> list[tuple[int, int]]:
    """Spans of the Chinese names `text` introduces or titles (王小明先生, 李先生)."""
    spans: list[tuple[int, int]] = []
    for match in _QUOTED.finditer(text):
        spans.append(match.span(1))
    for pattern, need_surname in ((_INTRODUCED, False), (_ROLE_CALLED, True),
                                  (_PET_CALLED, False)):
        for match in pattern.finditer(text):
            end = _name_at(text, match.end(), need_surname=need_surname)
            if end > match.end():
                spans.append((match.end(), end))
    for match in _TITLED.finditer(text):
        start = _titled(text, match.start())
        if start < 0:
            continue
        # A full name is the detail (a summary may drop the title); a surname alone is
        # a name only with it (李先生).
        alone = match.start() - start == _surname_length(text, start)
        spans.append((start, match.end() if alone else match.start()))
    return spans

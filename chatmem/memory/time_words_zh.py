"""Chinese time words (`上上周五`, `大前天`, `二〇二二年五月`, `三月下旬`, `月底`, `上个周末`,
`前两周`, `四月第一周`, `4号`, `昨晚`, `今天`) as the spans of time they name; `time_words`
reads them alongside the English ones. Written in simplified characters only: `time_words` folds
traditional ones (上個月, 上週五, 三月五號) to them first."""

from __future__ import annotations

import re
from datetime import datetime

from chatmem.lazy_patterns import lazy
from chatmem.memory.time_spans import (
    TimeSpan,
    ago,
    dated,
    day_of_month,
    days_back,
    month_span,
    months_back,
    named_month,
    part_of_month,
    part_of_named_month,
    part_of_year,
    past,
    this_week,
    this_weekend,
    week_of_named_month,
    weekday_span,
    weekend,
    weeks_back,
    year_span,
)
from chatmem.text import CJK_LETTERS, HAN

ZH_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
             "九": 9, "十": 10}
# A year is read digit by digit (二〇二二), not as a number (两千零二十二).
ZH_YEAR_DIGITS = {"〇": 0, "○": 0, "零": 0, "一": 1, "二": 2, "三": 3, "四": 4, "五": 5,
                  "六": 6, "七": 7, "八": 8, "九": 9}
ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6,
               "1": 0, "2": 1, "3": 2, "4": 3, "5": 4, "6": 5, "7": 6}
UNIT_DAYS = {"天": 1, "日": 1, "周": 7, "星期": 7, "礼拜": 7}
MONTH_PARTS = {"初": "early", "上旬": "early", "中旬": "mid", "下旬": "late", "底": "late",
               "末": "late"}
# Words ending in 上 (楼上 upstairs, 爱上 fall for, 会上 at the meeting): in 楼上上个月 the
# first 上 belongs to 楼上 and the time is 上个月, not 上上个月.
_WORDS_ENDING_IN_SHANG = set("楼马早晚路网身手以加线桌班北爱迷看赶跟碰遇考当向往世地床墙街车头脸"
                             "心嘴会台面穿戴关锁配算比山岸场")
# Likewise words ending in 大: 老大前天 is the eldest, the day before yesterday.
_WORDS_ENDING_IN_DA = set("老伟强远重长广巨最很好太放扩胆高庞")

# Runs (of numerals, 上, 大) are matched only from where they start: tried from every
# position of a long run (40,000 digits) the pattern took a minute, growing with its square.
# Nor from the end of a Latin token: Q3 月报 is the third quarter's report.
_MONTH_WORD_ENDS = "[份底初中末旬上下]"
"""What follows 月 where it ends a time word (3 月份, 12 月底, 3 月初, 5 月中旬), not begins
another one (月报, 月度, 月活)."""
_NUM = rf"(?<![0-9一二两三四五六七八九十])(?<![^\W\d_{CJK_LETTERS}])[0-9一二两三四五六七八九十]+"
# One space (or NBSP, or an ideographic one) may stand between a number and 年, 月, 日 or
# 号, as many type it: 2025 年 12 月 31 日, 3 月初, 去年 3 月.
_S = "[ \u00a0\u3000]?"
_YEAR = r"(?:19|20)\d\d|(?:一九|二[〇○零])[〇○零一二三四五六七八九]{2}"
# 初, 底 and 末 also begin words (初中 junior high, 初次 first time, 初五 a lunar day,
# 底薪 base pay, 末班 last bus): there they say nothing of a part of the month.
_EARLY = r"初(?![中次恋步学期心见衷稿始级赛审试夏春秋冬雪版识〇零一二三四五六七八九十])"
_LATE = r"底(?![下线层气子薪价部盘牌稿色片])|末(?![班尾日期梢端位])"
_PART = rf"{_EARLY}|上旬|中旬|下旬|{_LATE}"
# 月底 alone is this month's end, unless another word names the month (下个月底, 正月初,
# 每月底, 3 月初): read only after a word that cannot.
_ALONE = (r"(?:(?<![\u3400-\u9fff])(?<![0-9一二两三四五六七八九十][ \u00a0\u3000])"
          r"|(?<=[到在等于至从是就再快了说和也都还要这]))")
# 前两周 (the past two weeks), but not 提前两天 (two days ahead) or 之前三个月: after a word
# that cannot end in 前 or 近 (接近三个月 is a length of time, not when). After 的 only
# 最近, 近 and 过去 count back from now: 旅行的前三天 are the trip's first three days, 开学的
# 前两周 the term's first two weeks, 旅行的这几天 the days of the trip.
_PAST = (r"(?:(?<![\u3400-\u9fff])|(?<=[在是就了说和也都还我你他她它们])|(?<=的)(?=最近|近|过去))"
         r"(?P<past_said>最近|近|过去的?|前|这)")
# 下周三, 下个星期五, 下下周一, 下周的周三: a weekday to come. Not the 下 ending a word
# (看一下周三的安排 is a look at Wednesday's plans, 楼下, 私下, 剩下).
_WORD_ENDING_下 = "[一以楼地私底乡天陛阁殿眼当手部属剩坐躺]"
# Read from the first 下 of a run only (or the second, after a 下 ending a word: 看一下下周三),
# as 上+ is: tried from every 下 of 下下下…, each read to the run's end, a message of 30,000
# took minutes (the GIL held: a server stalled), and a later start finds nothing the first
# does not.
_NEXT = rf"(?:(?<!{_WORD_ENDING_下})(?<!下)下|(?<={_WORD_ENDING_下}下)下)"
# 今天, 今早 (this morning), but not 如今 + 天气 (the weather nowadays), 至今 + 早已.
_TODAY = r"(?<![如至迄现当而古于])"
# 前晚 is the night before last, but not 之前 + 晚 (比之前晚了, later than before), 睡前,
# 三天前 + 晚上, or 前 + 晚点 (提前晚点).
_NIGHT_BEFORE_LAST = r"(?<![之以提饭睡会先面眼目当事空从午早年月天周日课战婚节考行])前晚(?![点些])"
# 今天之前, 昨天以前, 到今天为止, 今天以后: up to or from that day, no single day.
_NOT_BOUND = r"(?!之前|以前|为止|之后|以后)"
# What makes a weekday or a weekend no one day: 每 before it (每 周五, pangu-spaced; 每逢周末,
# 每到周末), or a list or a range of weekdays 每 opened (每周一、周三、周五, 每周二和周四,
# 每周一到周五), as "every Monday, Wednesday and Friday" names none. Matched back from the
# word, within _EVERY_REACH characters.
_LISTED = r"(?:以及|或者|还有|[、,，和与及跟或到至~～-])"
_DAY = "[一二三四五六日天1-7]"
_WEEKDAYS_OPENED = (rf"(?:周|星期|礼拜){_DAY}(?:{_S}{_LISTED}{_S}(?:周|星期|礼拜)?{_DAY})*"
                    rf"{_S}{_LISTED}{_S}")
"""A weekday and more after it, up to the list word before the one matched (周一、周三、)."""
_EVERY = lazy(rf"每(?:一?个|逢|到)?{_S}(?:{_WEEKDAYS_OPENED})?\Z")
_EVERY_REACH = 64
# A weekday listed after one of last or this week (上周一和周三, 这周二、周四) is that week's too,
# as "last Monday and Wednesday" names last week's Wednesday.
_WEEK_LISTED = lazy(rf"(?:(?P<last>上+)个?|(?P<this>这个?|本)){_S}{_WEEKDAYS_OPENED}\Z")
# 周 五 and 上周 五 (a space typed inside) are Friday, but not 上周 五个人 (five people last
# week), 周 一起 or 周 日报: a numeral one space off begins a count or a word as often.
_SPACED_WD_ENDS = ("(?![0-9一二三四五六七八九十百千万个人次天日位名条件块元岁年月号点份"
                   "起直样下些切定般共报])")
PATTERN = lazy(
    # 上周末, 上上个周末, 这个周末; 周末 alone, but not 每个周末 (every weekend) or 下周末
    rf"(?P<wkend_last>(?<!上)上+个?)周末|(?P<wkend_this>这个?|本)周末"
    rf"|(?<![每下个这本上周])(?P<wkend>周末)"
    rf"|{_PAST}(?P<past_n>{_NUM}|几)\s*个?(?P<past_unit>天|日|周|星期|礼拜|月)"
    # 星期五, 上周五, 上上周五, 这周五, 下(个)周五; 周一 only where it is not 周 + 一起/一直
    # (all week, together). Not 每周五, 每个星期五, 每逢周五 (every Friday), which name no one
    # day, as "every Friday" does not. 周5 and 星期5 are Friday too, but not 一周5次 (five
    # times a week), 每周5天 or 周12; 周5晚 is five nights but 周5晚上 (周5晚饭, 周5晚8点)
    # Friday evening. A digit may stand one space off, pangu-spaced (周 5, 上周 5).
    rf"|(?<!每)(?<!每个)(?<!每一个)(?<!每逢)(?<!每到)(?<!逢)"
    rf"(?:(?P<wd_last>(?<!上)上+个?)|(?P<wd_this>这个?|(?<![日课书剧账资成样原基根])本)"
    rf"|(?P<wd_next>{_NEXT}下*(?:一?个)?(?:(?:周|星期|礼拜)的)?))?"
    rf"(?:星期|礼拜|周(?!一[起直样下些点切定般共]))"
    rf"(?:(?P<wd>[一二三四五六日天])"
    rf"|[ \u00a0\u3000](?P<wd_spaced>[一二三四五六日]){_SPACED_WD_ENDS}"
    rf"|{_S}(?P<wd_digit>[1-7])(?![0-9.:%]|{_S}[次天日个小节门篇页分元块人名条场回遍趟号点]"
    rf"|{_S}晚(?![上饭餐间会宴点0-9一二三四五六七八九十])))"
    rf"|(?P<ago_n>{_NUM}|几)\s*(?:个)?(?P<ago_unit>天|日|周|星期|礼拜|月)(?:之)?前"
    # 去年五月底, 去年底, 去年年初
    rf"|(?P<rel_year>去年|今年|(?<!大)大*前年)(?:{_S}(?P<rel_year_month>{_NUM}){_S}月"
    rf"(?P<rel_year_part>{_PART})?|年?(?P<rel_year_edge>{_EARLY}|{_LATE}))?"
    rf"|(?P<rel_month>(?<!上)上+个?月|这个月|本月)(?:{_S}(?P<rel_month_part>{_PART}))?"
    rf"|(?P<rel_week>(?<!上)上+个?(?:周|星期|礼拜)|这周|本周)"
    rf"|(?P<rel_day>昨[天日晚夜]|{_TODAY}今[天日早晚]|(?<!大)大*前天|{_NIGHT_BEFORE_LAST})"
    rf"{_NOT_BOUND}"
    # A month, but not a number after a Latin word where 月 begins a word (Top 3 月度榜单,
    # iOS 18 月活) unless a day follows (deadline 3 月 15 日); 月份, 月底, 月初 and a 月 that
    # ends the words (Sprint 12 月底结束, trip in 3 月) are months.
    rf"|(?:(?P<year>{_YEAR})\s*年\s*)?"
    rf"(?:(?<![^\W\d_{CJK_LETTERS}][ \u00a0\u3000])|(?={_NUM}{_S}月{_S}{_NUM}{_S}[日号])"
    rf"|(?={_NUM}{_S}月(?:{_MONTH_WORD_ENDS}|(?![{HAN}]))))"
    rf"(?P<month>{_NUM}){_S}月(?:份)?"
    rf"(?:{_S}(?:(?P<day>{_NUM}){_S}[日号]|(?P<lunar_day>初[一二三四五六七八九十])"
    rf"|(?P<month_part>{_PART})|的?第(?P<month_week>[一二三四1-4])个?(?:周|星期|礼拜)"
    rf"|的?(?P<month_last_week>最后一个?(?:周|星期|礼拜))))?"
    rf"(?P<around>左右|前后)?"
    # 4号 alone: this month's 4th, or the latest before it; not 3号线 (Line 3), 5号楼, 第4号
    # or 选手4号 (contestant 4)
    rf"|(?<![月第])(?<![月第][ \u00a0\u3000])(?<!选手)(?<!选手[ \u00a0\u3000])"
    rf"(?<![^\W\d_{CJK_LETTERS}][ \u00a0\u3000])"
    rf"(?P<day_only>{_NUM}){_S}号(?!{_S}(?:[线楼房门位院机桌床口库码球称]|选手))"
    rf"(?P<day_only_around>左右|前后)?"
    rf"|(?P<only_year>{_YEAR})\s*年(?:年?(?P<only_year_edge>{_EARLY}|{_LATE}))?"
    rf"|{_ALONE}(?:月(?P<this_month_part>{_EARLY}|{_LATE})"
    rf"|年(?P<this_year_edge>{_EARLY}|{_LATE}))")


def zh_number(text: str) -> int | None:
    """十二, 两, 3, 二十: a small number in Chinese numerals or digits."""
    if text.isdigit():
        return int(text)
    if not text or any(c not in ZH_DIGITS for c in text):
        return None
    if "十" not in text:
        return ZH_DIGITS[text] if len(text) == 1 else None
    tens, _, ones = text.partition("十")
    return (ZH_DIGITS.get(tens, 0) if tens else 1) * 10 + (ZH_DIGITS.get(ones, 0) if ones else 0)


def zh_year(text: str) -> int:
    """2022 or 二〇二二 (二零二二)."""
    if text.isdigit():
        return int(text)
    return int("".join(str(ZH_YEAR_DIGITS[c]) for c in text))


def _repeats(m: re.Match[str], group: str, char: str, word_endings: set[str],
             least: int) -> int:
    """How many times `char` opens the group (上上周: 2, 上上上周: 3), less one where the
    first belongs to the word before it (楼上上个月: 1), though never fewer than `least`."""
    said = m[group]
    count = len(said) - len(said.lstrip(char))
    start = m.start(group)
    if count > least and start > 0 and m.string[start - 1] in word_endings:
        count -= 1
    return count


def _part(span: TimeSpan, part: str | None, now: datetime) -> TimeSpan | None:
    return part_of_month(span, MONTH_PARTS[part], now) if part else span


def _year_part(year: int, part: str | None, now: datetime) -> TimeSpan | None:
    return part_of_year(year, MONTH_PARTS[part], now) if part else year_span(year, now)


def _every(m: re.Match[str]) -> bool:
    """Whether 每 (every) says the weekday or weekend `m` matched (see _EVERY)."""
    return _EVERY.search(m.string, max(0, m.start() - _EVERY_REACH), m.start()) is not None


def read(m: re.Match[str], now: datetime) -> TimeSpan | None:
    g = m.groupdict()
    if (g["wkend"] or g["wd"] or g["wd_spaced"] or g["wd_digit"]) and not (
            g["wd_last"] or g["wd_this"] or g["wd_next"]) and _every(m):
        return None
    if g["wkend_last"]:
        back = _repeats(m, "wkend_last", "上", _WORDS_ENDING_IN_SHANG, 1) - 1
        return weekend(now, over=True, back=back)
    if g["wkend_this"]:
        return this_weekend(now)
    if g["wkend"]:
        return weekend(now)
    if g["past_said"]:
        count = 3 if g["past_n"] == "几" else zh_number(g["past_n"])
        if not count or (count == 1 and g["past_said"] == "前"):
            return None  # 前一天 is the day before some other day
        if count == 1 and g["past_said"] == "这" and g["past_unit"] in ("天", "日"):
            return None  # 这一天 is some day the talk is about, not the past day
        unit = 30 if g["past_unit"] == "月" else UNIT_DAYS[g["past_unit"]]
        return past(count, unit, now)
    if g["day_only"]:
        day = zh_number(g["day_only"])
        return None if day is None else day_of_month(day, now, around=bool(g["day_only_around"]))
    if g["wd"] or g["wd_spaced"] or g["wd_digit"]:
        weekday = ZH_WEEKDAYS[g["wd"] or g["wd_spaced"] or g["wd_digit"]]
        if g["wd_next"]:
            return None  # a day to come: nothing said of it yet (as of "next Wednesday")
        if g["wd_this"]:
            # This week's: said of it only once it has come.
            return weekday_span(weekday, now, weeks_before=0) \
                if weekday <= now.weekday() else None
        weeks = _repeats(m, "wd_last", "上", _WORDS_ENDING_IN_SHANG, 1) if g["wd_last"] else None
        listed = None if g["wd_last"] else \
            _WEEK_LISTED.search(m.string, max(0, m.start() - _EVERY_REACH), m.start())
        if listed is not None and listed["this"]:
            return weekday_span(weekday, now, weeks_before=0) \
                if weekday <= now.weekday() else None
        if listed is not None:
            weeks = len(listed["last"])
        return weekday_span(weekday, now, weeks_before=weeks)
    if g["ago_n"]:
        count = 3 if g["ago_n"] == "几" else zh_number(g["ago_n"])
        if count is None:
            return None
        if g["ago_unit"] == "月":
            return months_back(count, now)
        return ago(count, UNIT_DAYS[g["ago_unit"]], now)
    if g["rel_year"]:
        said = g["rel_year"]
        back = {"去年": 1, "今年": 0}[said] if said in ("去年", "今年") else \
            2 + _repeats(m, "rel_year", "大", _WORDS_ENDING_IN_DA, 0)
        year = now.year - back
        if g["rel_year_month"]:
            month = zh_number(g["rel_year_month"])
            if not month or not 1 <= month <= 12:
                return None
            return _part(month_span(year, month, now), g["rel_year_part"], now)
        return _year_part(year, g["rel_year_edge"], now)
    if g["rel_month"]:
        back = _repeats(m, "rel_month", "上", _WORDS_ENDING_IN_SHANG, 1)
        return _part(months_back(back, now), g["rel_month_part"], now)
    if g["rel_week"]:
        if g["rel_week"].startswith("上"):
            return weeks_back(_repeats(m, "rel_week", "上", _WORDS_ENDING_IN_SHANG, 1), now)
        return this_week(now)
    if g["rel_day"]:
        said = g["rel_day"]
        # 昨晚 and 前晚 are the nights of those days: a day's messages, as 昨天's are.
        back = 1 if said[0] == "昨" else 0 if said[0] == "今" else \
            2 + _repeats(m, "rel_day", "大", _WORDS_ENDING_IN_DA, 0)
        return days_back(back, now)
    if g["month"]:
        month = zh_number(g["month"])
        if month is None or not 1 <= month <= 12:
            return None
        if g["lunar_day"]:
            # 五月初五 is a day of the lunar calendar, weeks from May 5th: no day we can name.
            return None
        written_year = zh_year(g["year"]) if g["year"] else None
        if g["day"]:
            day = zh_number(g["day"])
            return None if day is None else dated(month, day, now, around=bool(g["around"]),
                                                  year=written_year)
        span = named_month(month, written_year, now)
        if g["month_week"]:
            return week_of_named_month(month, written_year, zh_number(g["month_week"]), now)
        if g["month_last_week"]:
            return week_of_named_month(month, written_year, None, now)
        if g["month_part"]:
            return part_of_named_month(month, written_year, MONTH_PARTS[g["month_part"]], now)
        return span
    if g["only_year"]:
        return _year_part(zh_year(g["only_year"]), g["only_year_edge"], now)
    if g["this_month_part"]:
        return _part(months_back(0, now), g["this_month_part"], now)
    if g["this_year_edge"]:
        return _year_part(now.year, g["this_year_edge"], now)
    return None

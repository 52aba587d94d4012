"""The words of amounts and dates in the languages the drift guard reads (anchors.py).

Tables, one row a language, joined into the alternations of anchor_patterns.py's patterns:
adding a language is a row here, not a pattern there (each pattern is one more scan of
every message). Longer forms first in each alternation, so "万円" wins over "円".
"""

from __future__ import annotations

# Units after a Chinese numeral as after an Arabic one (五千元, 三万円): Han only.
HAN_UNITS = (
    "美元|欧元|歐元|日元|港元|英镑|英鎊|人民币|人民幣|万元|萬元|万円|萬円|公里|公斤|千克|小时|小時"
    "|分钟|分鐘|块钱|塊錢|元|円|块|塊|岁|歲|天|晚|泊|人|名|个|個|件|次|张|張|号|號|页|頁|米|克"
)
# Units after an Arabic number only. Hangul: won, dollars, euros, yen, yuan, people,
# nights, hours, minutes, years of age. Korean's own large numbers (5만 원) are in
# LARGE_NUMBERS.
HANGUL_UNITS = "만원|원|달러|유로|엔|위안|명|박|시간|분|살|세"
KANA_UNITS = "ドル|ユーロ|ウォン|ポンド"
LATIN_UNITS = (
    "km/h|mph|kg|km|cm|mm|mb|gb|tb|ms|usd|eur|gbp|rmb|cny|yuan|dollars?|euros?|percent"
    "|years?|months?|weeks?|days?|nights?|hours?|hrs?|minutes?|mins?|seconds?|secs?"
    "|people|persons?|guests?|items?|pieces?|tickets?|rooms?|pages?|miles?|meters?|metres?"
    "|kilometers?|kilograms?|grams?|pounds?|lbs?|ounces?|oz|liters?|litres?|ml|l|m|g|k|x"
    # German: a capitalised noun after a number is counted, never a name (2 Tage, 3 Nächte).
    "|tage?n?|wochen?|monate?n?|jahre?n?|stunden?|minuten|sekunden|nächte|nacht|personen"
    "|gäste|zimmer|kinder|erwachsene|stück|prozent"
)
# A currency written after the amount (100 €, 500 TL, 500.000 đồng, 50 zł, 1.200 kr):
# signs, codes (not TRY nor PHP, English words) and local names. Matched without regard
# to case, after a number, so "cad" alone is no anchor.
CURRENCIES_AFTER = (
    "€|£|¥|₩|₹|₪|₽|₺|₫|₱|฿|₴|₦|₸|₭|₮"
    "|jpy|hkd|chf|aud|cad|sgd|nzd|inr|krw|twd|sek|nok|dkk|pln|czk|huf|rub|brl|mxn|zar"
    "|thb|myr|idr|vnd|aed|sar|ils"
    "|tl|zł|zl|kč|kr|ft|lei|лв|руб|грн|đồng|dong|đ|rupees?|yen|won|baht|rubles?|lira"
    "|reais|pesos?|francs?|rand|ringgit|rupiah|shekels?|zloty"
)
# A currency sign before the amount (₩50,000, ₹5,000); $ and its prefixes (US$, R$) and
# ISO codes (EUR 42,500) have their own part of the pattern.
SIGNS_BEFORE = "€£¥￥₩₹₪₽₺₫₱฿₴₦₸₭₮"
# Words for a thousand, ten thousand, a hundred million between a number and its unit
# (5万円, 5만 원, 3千元).
LARGE_NUMBERS = "万萬千百亿億만천억"

# Month names a day comes before (15 März 2026, 15 de marzo de 2026, 15 Mart 2026,
# 15 марта 2026): German, French, Spanish, Italian, Portuguese, Dutch, Turkish, Polish and
# Russian (genitive, as a date writes them), Indonesian. English's are MONTHS_EN, matched
# with their case (May 5 and "5 may work" differ).
MONTHS_BY_LANGUAGE = {
    "de": "Januar Jänner Februar März Maerz April Mai Juni Juli August September Oktober"
          " November Dezember",
    "fr": "janvier février fevrier mars avril mai juin juillet août aout septembre octobre"
          " novembre décembre decembre",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre setiembre octubre"
          " noviembre diciembre",
    "it": "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre"
          " novembre dicembre",
    "pt": "janeiro fevereiro março marco abril maio junho julho agosto setembro outubro"
          " novembro dezembro",
    "nl": "januari februari maart april mei juni juli augustus september oktober november"
          " december",
    "tr": "Ocak Şubat Mart Nisan Mayıs Haziran Temmuz Ağustos Eylül Ekim Kasım Aralık",
    "pl": "stycznia lutego marca kwietnia maja czerwca lipca sierpnia września października"
          " listopada grudnia",
    "ru": "января февраля марта апреля мая июня июля августа сентября октября ноября декабря",
    "id": "Januari Februari Maret April Mei Juni Juli Agustus September Oktober November"
          " Desember",
    "lb": "Januar Februar Mäerz Abrëll Mee Juni Juli August September Oktober November"
          " Dezember",
}
MONTHS_EN = (
    "January|February|March|April|May|June|July|August|September|October|November|December"
    "|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
# Words between a day, its month and its year: "15 de marzo de 2026", "15 of March",
# Vietnamese "15 tháng 3 năm 2026".
DATE_LINKS = "of|de|del"
YEAR_LINKS = "de|del|năm"
# A month that is a word and a number: Vietnamese "tháng 3" (month 3).
NUMBERED_MONTHS = r"tháng\s\d{1,2}"


# Languages that write every noun, or their weekdays and months, with a capital: there a
# capital letter does not make a name (anchors.py). Weekdays and months, and the time
# words of German and Luxembourgish (Montag Abend), are never one; nor the pronouns and
# greetings that start a German sentence.
_CAPITALISED_CALENDARS = {
    "de": "Montag Dienstag Mittwoch Donnerstag Freitag Samstag Sonnabend Sonntag Morgen"
          " Vormittag Mittag Nachmittag Abend Nacht Wochenende Woche Monat Jahr Tag Heute"
          " Gestern Uhr",
    "lb": "Méindeg Dënschdeg Mëttwoch Donneschdeg Freideg Samschdeg Sonndeg",
    "tr": "Pazartesi Salı Çarşamba Perşembe Cuma Cumartesi Pazar",
    "id": "Senin Selasa Rabu Kamis Jumat Sabtu Minggu",
}
GERMAN_STOP_WORDS = ("Ich Wir Sie Er Es Du Ihr Ihnen Euch Uns Hallo Danke Bitte Ja Nein Und"
                     " Aber Oder Wie Was Wo Wann Warum Ech")
# After these a capitalised German or Luxembourgish word is a noun (die Lieferung, beim
# Zahnarzt, drei Wochen, pro Nacht, eng Rechnung), adjectives between them or not (die
# neue Wohnung). Not "en" (French "en France") nor "dat" (Dutch "dat Jan komt"); "am"
# has its own rule in anchors.py ("I am Bob").
_NOUN_MARKERS = {
    "de": "der die das den dem des ein eine einen einem einer eines mein meine meinen meinem"
          " meiner meines dein deine deinen deinem deiner sein seine seinen seinem seiner ihr"
          " ihre ihren ihrem ihrer unser unsere unseren unserem euer eure kein keine keinen"
          " keinem keiner diese dieser diesen diesem dieses jede jeder jeden jedem jedes"
          " welche welcher welchen beim zum zur vom im ins zwei drei vier fünf sechs sieben"
          " acht neun zehn elf zwölf zwanzig dreißig hundert tausend paar einige einigen"
          " mehrere viele vielen wenige beide beiden alle allen pro",
    "lb": "déi dës eng engem enger mäin meng däin deng säin seng",
}
NOUN_MARKERS = " ".join(_NOUN_MARKERS.values())


def alternation(words: str) -> str:
    """One regex alternation of space-separated words, longest first."""
    return "|".join(sorted(dict.fromkeys(words.split()), key=len, reverse=True))


def foreign_months() -> str:
    return alternation(" ".join(MONTHS_BY_LANGUAGE.values()))


CALENDAR_WORDS = frozenset({*" ".join(_CAPITALISED_CALENDARS.values()).split(),
                            *(word for language in ("de", "lb", "tr", "id")
                              for word in MONTHS_BY_LANGUAGE[language].split())})
"""Capitalised weekdays, months and time words (Montag, Mai, Mart): never a name."""

"""A long two-language conversation with recall probes, generated from a fixed seed.

The conversation runs over about four months in sittings (a few turns, then
a gap of hours or days), in English and Chinese. Among everyday chatter the
user states personal details; later, probes ask about them in other words:

  single    one statement, asked with no content word in common
  partial   one statement, asked with one or two of its words and the rest in
            other words (the shared words are common in the chatter too)
  multi     two statements joined by a name or thing the question never names,
            or three, each in its own sitting, each naming what the last one
            introduced
  temporal  "back then" questions ("in the winter", "most recently") whose
            answer is the statement made at a given time, among similar ones
  dated     the same kind of thing done at four times, asked with the time
            words people use — "in March", "last month", "three weeks ago",
            "last year", "去年", "上个月", "3月4号左右" — worked out from the
            messages' dates ("ts") and the time of the probe (the last message
            before it)

Between them: everyday chatter, and near misses — statements drawn from slots
on the same subjects as the facts (other relatives' jobs, other pets, other
trips, other allergies), so finding the right message takes more than
finding the topic.

Every probe lists the ids of its evidence messages (`expect_ids`) and a
string from the answer (`expect_text`). The generator checks that no probe
shares a content word (stemmed English word, or Chinese character bigram)
with its evidence, and fails loudly otherwise, so the benchmark cannot be
won by keyword matching alone.

    python benchmarks/recall_data.py > /tmp/recall.jsonl     # seed 7
    python benchmarks/recall_data.py --seed 11 --out recall-11.jsonl

Nothing here is tuned to chatmem's ranking: the same file is scored for
window, tokens, BM25, dense and hybrid recall alike (benchmarks/recall.py).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

# -- the facts a user states, and how they are asked about later ------------------------
#
# Each fact: (key, statement, assistant reply, question, answer text). A question must
# share no content word with its statement (checked below).

EN_FACTS: list[tuple[str, str, str, str, str]] = [
    ("brother-job",
     "My younger brother finally got hired as a dentist at a clinic in Leeds.",
     "A dentist in Leeds, that is great news for him.",
     "What does my sibling do for a living now, and where?", "dentist"),
    ("allergy",
     "Quick note for later: peanuts make my throat swell up, so I carry an epipen.",
     "Understood, I will keep that in mind whenever food comes up.",
     "Which food am I dangerously intolerant to?", "peanuts"),
    ("car",
     "We traded the old hatchback for a second-hand Volvo estate in dark green.",
     "A green Volvo estate sounds practical for trips.",
     "What vehicle does our household drive these days?", "Volvo"),
    ("wedding",
     "Sofia and I are getting married on the 14th of September in a vineyard near Porto.",
     "Congratulations to you both! A vineyard near Porto sounds beautiful.",
     "When is my ceremony with my fiancée happening?", "14th of September"),
    ("marathon",
     "I crossed the finish line of the Berlin marathon in 3 hours 52 minutes!",
     "That is a fantastic time, well done.",
     "How long did that long-distance race take me?", "3 hours 52"),
    ("cat",
     "Our tabby kitten is called Pickle and she keeps knocking mugs off the shelf.",
     "Pickle sounds like a handful, in the best way.",
     "What name did we give the new feline?", "Pickle"),
    ("salary",
     "The raise came through: I will earn 68,000 euros a year from April.",
     "Nice, 68,000 euros is a solid step up.",
     "How much money am I paid annually after my promotion?", "68,000"),
    ("flat",
     "We signed the lease on a flat in Zurich, third floor, right by the lake.",
     "Zurich by the lake, lovely spot.",
     "In which city is the apartment we rented?", "Zurich"),
    ("guitar",
     "I started taking cello lessons on Tuesday evenings with a teacher called Mireille.",
     "Cello with Mireille on Tuesdays, how exciting.",
     "Which instrument am I learning, and who instructs me?", "cello"),
    ("mother-birthday",
     "Mum turns seventy on the 3rd of June, we are planning a surprise picnic.",
     "A surprise picnic for her seventieth sounds perfect.",
     "What date is my mother's birthday?", "3rd of June"),
    ("doctor",
     "The GP said my vitamin D is low, so I take 2000 units every morning now.",
     "Good that it was caught, 2000 units daily is common.",
     "Which supplement was prescribed to me, and what dose?", "2000 units"),
    ("laptop",
     "My work laptop died, so IT gave me a ThinkPad X1 as a replacement.",
     "The ThinkPad X1 is a good machine.",
     "What computer do I use for my job now?", "ThinkPad"),
    ("language",
     "I signed up for Korean classes because we might relocate to Seoul next year.",
     "Learning Korean before a move to Seoul is a smart plan.",
     "Which foreign tongue am I studying, and why?", "Korean"),
    ("garden",
     "I planted tomatoes, basil and courgettes in the raised beds behind the house.",
     "Tomatoes, basil and courgettes, a classic summer trio.",
     "What vegetables did I put in the backyard?", "tomatoes"),
    ("boss",
     "My new manager is Ingrid Halvorsen, she came over from the Oslo office.",
     "Ingrid from Oslo, I hope she is easy to work with.",
     "Who is the person I report to at work?", "Ingrid"),
    ("book-club",
     "Our reading circle picked The Remains of the Day for this month.",
     "A quiet, moving novel, good choice.",
     "Which novel is my literature group discussing?", "Remains of the Day"),
    ("phone",
     "I lost my phone on the tram, so my number changed to 0761 448 203.",
     "Sorry about the phone. Noted the new number 0761 448 203.",
     "How can people call me since the mobile went missing?", "0761 448 203"),
    ("diet",
     "I have gone fully vegetarian since February, no meat or fish at all.",
     "That is a big change, how is it going so far?",
     "Do I still eat animal products?", "vegetarian"),
    ("flight",
     "Our flight to Reykjavik leaves at 06:40 on Friday, gate opens at 05:50.",
     "An early start, 06:40 to Reykjavik. Pack the night before.",
     "What time does the plane to Iceland depart?", "06:40"),
    ("injury",
     "I sprained my left ankle playing five-a-side football on Sunday.",
     "Ouch, rest it and keep it raised.",
     "Which part of my body got hurt during the match?", "ankle"),
    ("podcast",
     "I am hooked on a podcast called Hardcore History, the episodes are six hours long.",
     "Hardcore History is famously long and detailed.",
     "What show have I been listening to on my commute?", "Hardcore History"),
    ("password-manager",
     "I moved all my logins into Bitwarden after the breach at work.",
     "Bitwarden is a solid choice after a breach.",
     "Which tool stores my credentials?", "Bitwarden"),
    ("neighbour",
     "The couple next door, Dev and Anika, just had twins named Ravi and Mira.",
     "Twins! Dev and Anika will be busy.",
     "What are the babies living beside us called?", "Ravi"),
    ("coffee",
     "I switched to decaf after 2 pm because I could not sleep.",
     "Cutting caffeine in the afternoon helps a lot of people.",
     "What change did I make to my drinking habits to rest better?", "decaf"),
    ("bike",
     "Someone stole my bicycle from outside the library, a red Brompton.",
     "That is frustrating, did you report it?",
     "What was taken from me near the books building?", "Brompton"),
    ("anniversary",
     "For our anniversary we booked dinner at a Lebanese restaurant called Beit Zaytoun.",
     "Beit Zaytoun sounds lovely for an anniversary.",
     "Where are we eating to celebrate being together another year?", "Beit Zaytoun"),
    ("fear",
     "Honestly I am terrified of heights, even a stepladder makes me dizzy.",
     "Plenty of people feel that way, you are not alone.",
     "What phobia do I have?", "heights"),
    ("course",
     "I enrolled in an evening course on data visualisation at the city college.",
     "Data visualisation is a useful skill.",
     "What night class am I taking?", "visualisation"),
    ("grandfather",
     "Grandpa Alfred was a lighthouse keeper on the Scottish coast for thirty years.",
     "What a life, thirty years in a lighthouse.",
     "What did my mother's or father's father do as a career?", "lighthouse"),
    ("favourite-film",
     "My all-time favourite movie is Spirited Away, I rewatch it every winter.",
     "Spirited Away is a wonderful choice.",
     "Which picture do I love above every other?", "Spirited Away"),
]

# Multi-hop: the second statement names what the first introduced; the question names neither.
EN_CHAINS: list[tuple[str, tuple[str, str], tuple[str, str], str, str]] = [
    ("cousin-dog",
     ("My cousin Tomasz moved to Gdansk to work at the shipyard.", "Gdansk, on the coast, nice."),
     ("Tomasz adopted a greyhound and named it Biscuit.", "Biscuit is a great name for a dog."),
     "What is the name of the pet my relative from the docks got?", "Biscuit"),
    ("friend-band",
     ("My oldest friend Lucia plays bass in a band.", "A bassist, fun!"),
     ("Lucia's band is called The Paper Lanterns and they play on the 9th.",
      "The Paper Lanterns, I will remember that."),
     "What name does my childhood pal's musical group go by?", "Paper Lanterns"),
    ("colleague-book",
     ("Hamid, who sits across from me, lent me a thriller.", "Kind of him."),
     ("The novel Hamid lent me is The Silent Patient, I finished it in two nights.",
      "The Silent Patient has quite a twist."),
     "Which story did my deskmate give me to read?", "Silent Patient"),
    ("aunt-city",
     ("Aunt Beatriz runs a small bakery.", "A family baker, how lovely."),
     ("Beatriz's bakery is in Valparaíso, right by the funicular.", "Valparaíso is so colourful."),
     "In what town does my relative sell her pastries?", "Valparaíso"),
]

# Temporal: the same kind of thing said at three different times; each question asks for one.
EN_SERIES: list[tuple[str, list[tuple[str, str, str]], str]] = [
    ("reading",
     [("I'm reading Middlemarch at the moment, slow but rewarding.", "Middlemarch is a classic.",
       "Middlemarch"),
      ("Started Project Hail Mary yesterday, hard to put down.", "Great sci-fi pick.",
       "Project Hail Mary"),
      ("Now I'm into Pachinko, the family saga is gripping.", "Pachinko is beautiful.",
       "Pachinko")],
     "Which book had me hooked {when}?"),
    ("trip",
     [("We spent the weekend hiking in the Lake District, muddy but fun.",
       "The Lake District is gorgeous.", "Lake District"),
      ("Just back from three days in Lisbon, the custard tarts were unreal.",
       "Lisbon in spring is lovely.", "Lisbon"),
      ("We drove to the Black Forest for a long weekend.", "The Black Forest, nice drive.",
       "Black Forest")],
     "Where did we travel {when}?"),
]

ZH_FACTS: list[tuple[str, str, str, str, str]] = [
    ("zh-sister",
     "我妹妹上个月在成都开了一家火锅店，生意很好。", "恭喜她！成都的火锅店一定很热闹。",
     "我的兄弟姐妹现在从事什么工作？", "火锅店"),
    ("zh-allergy",
     "提醒一下：我对青霉素过敏，打针前一定要说。", "好的，青霉素过敏我记住了。",
     "有哪种药物我绝对不能用？", "青霉素"),
    ("zh-move",
     "我们下周搬到苏州工业园区，离公司近多了。", "搬到苏州园区，通勤会轻松很多。",
     "我们全家要迁往哪座城市？", "苏州"),
    ("zh-dog",
     "家里新养了一只柯基，名字叫豆包。", "豆包这个名字好可爱！",
     "我们刚领回来的小狗叫啥？", "豆包"),
    ("zh-exam",
     "我报名了六月份的注册会计师考试，每天晚上复习三个小时。", "注会很难，加油！",
     "我在准备哪项资格认证？", "注册会计师"),
    ("zh-wedding",
     "我和男朋友决定十月二号在厦门鼓浪屿办婚礼。", "鼓浪屿办婚礼太浪漫了！",
     "我们的喜事定在何时？", "十月二号"),
    ("zh-salary",
     "新工作的月薪是两万三，比以前多了不少。", "两万三，涨幅不小，恭喜！",
     "换岗以后我每月挣多少钱？", "两万三"),
    ("zh-car",
     "我们买了一辆白色的比亚迪海豹，电动的。", "比亚迪海豹续航不错。",
     "家里现在开什么车？", "比亚迪"),
    ("zh-teacher",
     "女儿的钢琴老师姓龚，每周六上午来家里上课。", "龚老师每周六来，挺方便的。",
     "孩子学乐器跟谁学？", "龚"),
    ("zh-hobby",
     "最近迷上了书法，每天早上临帖半小时。", "练字能静心，很好的习惯。",
     "我近来有什么新爱好？", "书法"),
    ("zh-surgery",
     "爸爸下周三要做白内障手术，在华山医院。", "希望手术顺利，华山医院很专业。",
     "父亲要接受什么治疗？", "白内障"),
    ("zh-phone",
     "我换了新号码：139 0211 7788，旧号不用了。", "新号码 139 0211 7788 记下了。",
     "现在怎么联系我？", "139 0211 7788"),
    ("zh-food",
     "我现在不吃辣了，胃不好，医生让我清淡饮食。", "胃不好确实要少吃辣。",
     "吃东西时我要避开哪种口味？", "辣"),
    ("zh-game",
     "周末和同学组队玩剧本杀，我演的是侦探。", "演侦探一定很过瘾！",
     "上次聚会时我扮演了什么角色？", "侦探"),
    ("zh-boss",
     "我们部门新来的总监叫欧阳菲，以前在腾讯。", "欧阳总监经验应该很丰富。",
     "现在我的上级领导是谁？", "欧阳菲"),
]

ZH_CHAINS: list[tuple[str, tuple[str, str], tuple[str, str], str, str]] = [
    ("zh-roommate-cat",
     ("我大学室友小林去了杭州做程序员。", "杭州互联网公司多，不错。"),
     ("小林养了一只橘猫，叫馒头。", "馒头这个名字真有意思。"),
     "我以前同寝那位朋友的宠物叫啥？", "馒头"),
    ("zh-uncle-shop",
     ("舅舅退休后开了一家茶叶铺。", "退休还创业，真有精神。"),
     ("舅舅的茶叶铺开在景德镇老城区。", "景德镇老城很有味道。"),
     "我母亲的兄弟在哪座城市做买卖？", "景德镇"),
]

ZH_SERIES: list[tuple[str, list[tuple[str, str, str]], str]] = [
    ("zh-drama",
     [("最近在追《漫长的季节》，太好看了。", "这部剧口碑很好。", "漫长的季节"),
      ("开始看《繁花》了，上海话听着很亲切。", "王家卫拍的，画面很美。", "繁花"),
      ("现在每晚看《三体》电视剧。", "三体改编得挺用心。", "三体")],
     "{when}我晚上都看哪部剧？"),
]

EN_WHEN = {0: "in the winter", 1: "in the spring", 2: "most recently"}
ZH_WHEN = {0: "冬天的时候", 1: "春天的时候", 2: "最近"}

# Multi-hop over three sittings or more: each statement names what the one before introduced.
EN_CHAINS3: list[tuple[str, list[tuple[str, str]], str, str]] = [
    ("quiz-partner",
     [("Greta from accounts is the one who organises our office quiz.", "Sounds like fun."),
      ("Greta's partner Joaquín is a marine biologist.", "What a job."),
      ("Joaquín is off to Antarctica in November for research.", "That is an adventure.")],
     "Where is the spouse of the woman who runs our trivia night heading?", "Antarctica"),
    ("mentor-vet",
     [("My mentor at work is a guy called Oskar.", "Good to have someone like that."),
      ("Oskar's daughter Elin just qualified as a vet.", "Congratulations to her."),
      ("Elin has taken a job at an animal hospital in Uppsala.", "Uppsala is a nice town.")],
     "In which town will my adviser's child be treating pets?", "Uppsala"),
]
ZH_CHAINS3: list[tuple[str, list[tuple[str, str]], str, str]] = [
    ("zh-teacher-cafe",
     [("我高中班主任姓温，教数学的。", "数学老师啊。"),
      ("温老师的儿子在深圳开了一家咖啡馆。", "年轻人创业挺好。"),
      ("那家咖啡馆叫山间小屋，在南山区。", "名字很有意境。")],
     "我以前带班的那位恩师，他孩子的店叫啥名字？", "山间小屋"),
]

# Dated: the same kind of thing done at four times; each question names its time the way
# people do ("in March", "last month", "two weeks ago", "去年", "上个月"), worked out from
# the messages' dates and the time of the probe (see when_phrases).
EN_DATED: list[tuple[str, list[tuple[str, str, str]], str]] = [
    ("eating-out",
     [("We had dinner at a Georgian place called Supra, the khachapuri was amazing.",
       "Georgian food is underrated.", "Supra"),
      ("Tried the new ramen bar Ichiran with friends tonight.", "Ramen with friends, nice.",
       "Ichiran"),
      ("Ate at a tapas bar called El Xampanyet, very loud but good.", "Tapas are always fun.",
       "Xampanyet"),
      ("Dinner at a Sichuan restaurant named Chilli Garden, my mouth is still burning.",
       "Sichuan pepper does that.", "Chilli Garden")],
     "Which eatery did we go out to {when}?"),
    ("concert",
     [("Saw Nils Frahm at the Barbican, stunning piano.", "He is wonderful live.", "Nils Frahm"),
      ("Went to see Arctic Monkeys at the O2 with my sister.", "A big show!", "Arctic Monkeys"),
      ("We caught a jazz trio called Mammal Hands in a tiny pub.", "Small venues are the best.",
       "Mammal Hands"),
      ("Björk's show was very theatrical, costumes everywhere.", "She is a true artist.",
       "Björk")],
     "Which musicians did I catch {when}?"),
]
ZH_DATED: list[tuple[str, list[tuple[str, str, str]], str]] = [
    ("zh-exhibit",
     [("去看了莫奈的画展，人超级多。", "莫奈的睡莲很有名。", "莫奈"),
      ("周末去了故宫博物院看文物展。", "故宫的文物太精美了。", "故宫"),
      ("带孩子去了上海天文馆，特别震撼。", "天文馆很适合孩子。", "天文馆"),
      ("去798看了一个当代艺术展。", "798很有氛围。", "798")],
     "{when}我去逛了哪个展览或场馆？"),
    ("zh-dinner",
     [("和大学同学在海底捞聚餐，聊到半夜。", "老同学聚会最开心。", "海底捞"),
      ("公司团建去吃了烤全羊。", "烤全羊很有气势。", "烤全羊"),
      ("和爸妈去吃了一家潮汕牛肉火锅。", "潮汕牛肉很鲜。", "潮汕牛肉"),
      ("跟闺蜜去吃了日料放题。", "放题很划算。", "日料")],
     "{when}我出去聚过一顿什么饭？"),
]
DATED_WINDOWS = [(0, 5), (14, 28), (32, 46), (50, 62)]
"""Sittings each dated item goes in: the first before the new year, the rest months apart."""

EN_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
             "September", "October", "November", "December"]
ZH_NUMBERS = ["", "一", "两", "三", "四", "五", "六", "七", "八", "九", "十", "十一", "十二"]


def when_phrases(lang: str, said: datetime, now: datetime, others: list[datetime]
                 ) -> list[str]:
    """How a person could name the time of `said` at `now`, so that none of `others`
    (the series' other items already said) fits the same words."""
    phrases: list[str] = []

    def month_index(t: datetime) -> int:
        return t.year * 12 + t.month - 1

    back = month_index(now) - month_index(said)
    same_month = any(month_index(o) == month_index(said) for o in others)
    if said.year == now.year - 1 and all(o.year != said.year for o in others):
        phrases.append("last year" if lang == "en" else "去年")
    if 1 <= back <= 10 and not same_month:
        if lang == "en":
            name = EN_MONTHS[said.month - 1]
            phrases.append(f"last {name}" if said.year < now.year else f"in {name}")
        else:
            month = ZH_NUMBERS[said.month].replace("两", "二")
            phrases.append(("去年" if said.year < now.year else "") + f"{month}月份")
    if back == 1 and not same_month:
        phrases.append("last month" if lang == "en" else "上个月")
    if all(abs((said - o).total_seconds()) > 3 * 86400 for o in others):
        if lang == "en":
            phrases.append(f"around {EN_MONTHS[said.month - 1]} {said.day}")
        else:
            phrases.append(f"{said.month}月{said.day}号左右")
    days = (now - said).total_seconds() / 86400
    weeks = round(days / 7)
    if 1 <= weeks <= 6 and abs(days - 7 * weeks) <= 2 and all(
            abs((now - o).total_seconds() / 86400 - 7 * weeks) > 10 for o in others):
        if lang == "en":
            phrases.append("a week ago" if weeks == 1 else
                           f"{['', '', 'two', 'three', 'four', 'five', 'six'][weeks]} weeks ago")
        else:
            unit = "个星期前" if weeks % 2 else "周前"
            phrases.append(f"{ZH_NUMBERS[weeks]}{unit}")
    return phrases

# Partial: single facts asked with one or two words of their statement (never the answer);
# the rest in other words. Sharing a word is how people often ask, and the shared word
# alone is rarely enough: near misses and chatter use it too.
PARTIAL = {
    "brother-job": "What job did my brother land?",
    "allergy": "What food makes my throat react badly?",
    "car": "What did we swap the hatchback for?",
    "cat": "What name did we give the kitten?",
    "salary": "What did the raise bring my pay to?",
    "flat": "Which city is our lease in?",
    "doctor": "What vitamin am I short of?",
    "laptop": "What laptop do I have these days?",
    "boss": "Where did my manager come from?",
    "phone": "What is my number these days?",
    "injury": "What happened at football?",
    "bike": "Where was my bicycle taken?",
    "anniversary": "What is our anniversary plan?",
    "podcast": "Which podcast do I like?",
    "fear": "What leaves me feeling dizzy?",
    "zh-dog": "柯基叫什么？",
    "zh-allergy": "打针前要注意什么？",
    "zh-car": "我们的电动车是什么牌子？",
    "zh-boss": "总监是从哪家公司来的？",
    "zh-surgery": "爸爸要去哪家医院？",
    "zh-hobby": "早上我练什么？",
}

# -- everyday chatter that shares words with the questions but answers none -------------

EN_FILLER_USER = [
    "Do you think living in a big city is worth the rent?",
    "What's a good way to stay focused at work in the afternoon?",
    "I watched a documentary about lighthouses and shipwrecks, oddly relaxing.",
    "Any tips for keeping houseplants alive in winter?",
    "How do people decide between renting and buying a home?",
    "The weather today is grey and drizzly again.",
    "I tried a new recipe for lentil soup, it came out a bit bland.",
    "What's the difference between a latte and a flat white?",
    "Traffic this morning was terrible, took forty minutes to get in.",
    "Do you have any recommendations for a relaxing weekend?",
    "I keep forgetting to drink enough water during the day.",
    "What should I pack for a short business trip?",
    "My inbox is overflowing, I need a better system.",
    "Is it normal to feel tired after a long meeting?",
    "I read an article about how pets reduce stress.",
    "We watched a movie last night, it was okay, nothing special.",
    "How long should a good night's sleep be?",
    "I'm thinking about taking up a new hobby, maybe pottery.",
    "The supermarket was out of oat milk again.",
    "What's a polite way to decline an invitation?",
    "Do you know any good stretches for a stiff back?",
    "My friend keeps sending me memes at 2 am.",
    "I need to remember to call the plumber about the sink.",
    "Which is healthier, cycling or swimming?",
    "The office heating is broken so everyone is wearing coats.",
    "How do you stay motivated to exercise when it's cold?",
    "I spent an hour organising my photos from last year.",
    "Is there a trick to folding fitted sheets?",
    "My family group chat is all about the weather today.",
    "What's a good gift for someone who has everything?",
    "Is it worth paying for a music streaming service?",
    "We argued about whose turn it was to do the dishes.",
    "I found an old diary from school, very embarrassing.",
    "Any idea how to get rid of fruit flies in the kitchen?",
    "My relative keeps asking when I'll visit, I should plan something.",
    "What do you think of standing desks?",
    "The train was delayed again, I read the whole time.",
    "Should I learn to touch type properly?",
    "Our team lunch was at a noodle place, pretty good.",
    "I'm trying to spend less time scrolling on my phone.",
]
EN_FILLER_REPLY = [
    "It depends a lot on what you value day to day, but it is worth weighing carefully.",
    "Short breaks and a clear list of three priorities usually help.",
    "That is a nice way to unwind after a long week.",
    "Keep them away from cold windows and water a little less often.",
    "Mostly on how long you plan to stay and how stable your income feels.",
    "A good day for a hot drink and a blanket, then.",
    "A squeeze of lemon and more salt usually rescues it.",
    "Mostly the ratio of milk to espresso and the texture of the foam.",
    "That is rough. Maybe leaving ten minutes earlier helps.",
    "A walk, a long lunch and an early night rarely fail.",
    "Keeping a bottle on your desk is the easiest trick.",
    "Layers, one smart outfit, chargers and your documents.",
    "Try filtering by sender and archiving everything older than a month.",
    "Very normal. Meetings take more energy than people expect.",
    "There is some good evidence for that, yes.",
    "Not every film has to be a masterpiece.",
    "For most adults seven to nine hours is the usual advice.",
    "Pottery is lovely, very hands-on and calming.",
    "Annoying! Maybe try a smaller shop nearby.",
    "Thank them warmly and say you already have plans.",
    "Gentle cat-cow and child's pose stretches help many people.",
    "Maybe mute the chat at night.",
    "Set a reminder now so it does not slip.",
    "Both are great; swimming is gentler on the joints.",
    "That sounds chilly, hopefully it is fixed soon.",
    "Exercising indoors or with a friend makes it easier.",
    "That is satisfying work once it is done.",
    "Tuck the corners into each other first, then fold in thirds.",
    "Family chats are like that.",
    "An experience, like a cooking class, is often welcome.",
    "If you listen every day it usually pays off.",
    "A simple rota can end those arguments.",
    "Everyone has one of those somewhere.",
    "A small dish of vinegar with a drop of soap works well.",
    "A short visit is often better than none.",
    "They help some people, especially if you alternate sitting and standing.",
    "At least you had time to read.",
    "It pays off quickly if you type a lot.",
    "Noodles are a safe choice for a team lunch.",
    "Turning off notifications is a good first step.",
]
ZH_FILLER_USER = [
    "今天天气又阴又冷，真不想出门。",
    "你觉得早上喝咖啡好还是喝茶好？",
    "最近工作有点忙，经常加班到很晚。",
    "周末打算在家大扫除。",
    "地铁上人太多了，挤得不行。",
    "有什么简单的晚饭可以推荐吗？",
    "我想把房间重新布置一下。",
    "朋友圈里大家都在晒旅游照片。",
    "最近睡眠不太好，总是半夜醒。",
    "你知道怎么去除衣服上的油渍吗？",
    "楼下新开了一家奶茶店，排队的人很多。",
    "我想学做几道家常菜。",
    "今天开了一整天的会，好累。",
    "下雨天适合在家看书。",
    "手机电池越来越不耐用了。",
    "最近菜价好像涨了不少。",
    "家里的绿萝长得特别好。",
    "同事们在讨论年终奖的事情。",
    "有没有适合初学者的运动？",
    "我打算这个月少点外卖。",
]
ZH_FILLER_REPLY = [
    "那就在家休息一下吧，泡杯热饮。",
    "看个人习惯，适量就好。",
    "注意身体，别太累了。",
    "大扫除完心情会好很多。",
    "高峰期确实辛苦，可以试试错峰出行。",
    "番茄炒蛋和青菜豆腐汤都很简单。",
    "换个布局会有新鲜感。",
    "看别人旅行也挺开心的。",
    "睡前少看手机可能会有帮助。",
    "可以先用洗洁精轻轻搓一下。",
    "新店开业总是很热闹。",
    "可以从简单的炒菜开始练。",
    "辛苦了，早点休息。",
    "雨天读书确实很惬意。",
    "可以检查一下后台耗电的应用。",
    "可以多去菜市场比比价。",
    "绿萝好养又好看。",
    "这个话题大家都很关心。",
    "快走和游泳都很适合入门。",
    "自己做饭更健康也更省钱。",
]

# Keyword questions (--lexical): the same single facts asked the way people often do,
# with an ordinary word or two of the statement (never the answer). For comparing word
# ranking where it has something to hold on to; the default benchmark is paraphrase only.
LEXICAL = {
    "brother-job": "What job did my younger brother get?",
    "allergy": "What makes my throat swell up?",
    "car": "What did we trade the old hatchback for?",
    "wedding": "When are Sofia and I getting married?",
    "marathon": "What was my time in the Berlin marathon?",
    "cat": "What is our tabby kitten called?",
    "salary": "How much will I earn after the raise?",
    "flat": "Where is the flat we signed the lease on?",
    "guitar": "Which lessons did I start on Tuesday evenings?",
    "mother-birthday": "When does Mum turn seventy?",
    "doctor": "How much vitamin D do I take?",
    "laptop": "What replacement laptop did IT give me?",
    "language": "Which classes did I sign up for before we relocate?",
    "garden": "What did I plant in the raised beds?",
    "boss": "Who is my new manager?",
    "book-club": "What did our reading circle pick this month?",
    "phone": "What is my number now that I lost my phone?",
    "diet": "Do I still eat meat or fish?",
    "flight": "When does our flight to Reykjavik leave?",
    "injury": "What did I sprain playing football?",
    "podcast": "Which podcast am I hooked on?",
    "password-manager": "Where did I move all my logins?",
    "neighbour": "What are the names of the twins next door?",
    "coffee": "What do I drink after 2 pm now?",
    "bike": "What kind of bicycle was stolen from me?",
    "anniversary": "Where did we book dinner for our anniversary?",
    "fear": "What am I terrified of?",
    "course": "What evening course did I enroll in?",
    "grandfather": "What did Grandpa Alfred do for thirty years?",
    "favourite-film": "What is my all-time favourite movie?",
    "zh-sister": "我妹妹开了什么店？",
    "zh-allergy": "我对什么药过敏？",
    "zh-move": "我们下周搬到哪里？",
    "zh-dog": "家里新养的柯基叫什么名字？",
    "zh-exam": "我报名了什么考试？",
    "zh-wedding": "我们在哪里办婚礼？",
    "zh-salary": "新工作的月薪是多少？",
    "zh-car": "我们买了什么车？",
    "zh-teacher": "女儿的钢琴老师姓什么？",
    "zh-hobby": "我最近迷上了什么？",
    "zh-surgery": "爸爸要做什么手术？",
    "zh-phone": "我的新号码是多少？",
    "zh-food": "医生让我怎么吃？",
    "zh-game": "剧本杀里我演的是什么？",
    "zh-boss": "部门新来的总监叫什么？",
}


# -- near misses: statements on the same subjects as the facts, about other people and things.
# Drawn from slots, so no two are alike: a ranking must tell them from the evidence.

EN_NEAR = [
    "My {rel} is thinking about retraining as a {job} in {city}.",
    "A friend of mine works as a {job} and says the hours are brutal.",
    "My {rel}'s {pet} is called {name}, it is very spoiled.",
    "We might visit {city} in {month}, nothing booked yet.",
    "My {rel} is allergic to {food}, dinners with them need planning.",
    "I read a review of a restaurant in {city} that serves {food}.",
    "My colleague bought a {vehicle} and regrets it already.",
    "My {rel} started learning {language} for fun.",
    "There is a {event} in {city} in {month}, tickets are expensive.",
    "My {rel} just finished reading {book} and lent it to me.",
    "I saw a documentary about a {job} in {city}.",
    "My {rel} earns about {amount} a year, I think.",
    "The {pet} next door barks every morning at six.",
    "We talked about moving to {city} one day, maybe when we retire.",
    "My {rel} has a {event} coming up in {month}.",
    "I might sign up for a {language} course in {month}.",
    "My {rel} plays the {instrument} in a community orchestra.",
    "Someone at the gym told me they take {supplement} every day.",
]
EN_SLOTS = {
    "rel": ["cousin", "uncle", "aunt", "neighbour", "flatmate", "old teacher", "godmother",
            "brother-in-law", "niece", "colleague's husband"],
    "job": ["pharmacist", "architect", "vet", "nurse", "chef", "pilot", "electrician",
            "accountant", "physiotherapist", "teacher"],
    "city": ["Lyon", "Dublin", "Kraków", "Seville", "Bergen", "Munich", "Ghent", "Turin",
             "Edinburgh", "Tallinn"],
    "pet": ["spaniel", "parrot", "rabbit", "hamster", "beagle", "tortoise", "ferret"],
    "name": ["Otto", "Maple", "Ziggy", "Bramble", "Noodle", "Pepper", "Juno"],
    "month": ["March", "April", "May", "June", "July", "October"],
    "food": ["shellfish", "gluten", "sesame", "dairy", "eggs", "kiwi"],
    "vehicle": ["Tesla", "camper van", "Vespa", "pickup truck", "Mini Cooper"],
    "language": ["Italian", "Japanese", "Portuguese", "Dutch", "Arabic", "Greek"],
    "event": ["jazz festival", "half marathon", "book fair", "wine tasting", "big birthday"],
    "book": ["Normal People", "Dune", "Circe", "The Road", "Educated", "Atonement"],
    "amount": ["45,000 pounds", "52,000 dollars", "39,000 euros", "80,000 francs"],
    "instrument": ["violin", "trumpet", "flute", "double bass", "harp"],
    "supplement": ["magnesium", "fish oil", "iron tablets", "zinc"],
}
EN_NEAR_REPLY = [
    "Interesting, thanks for sharing.", "That sounds like quite a change.",
    "Good to know.", "Ha, I can imagine.", "That could be fun.", "Fair enough.",
]
ZH_NEAR = [
    "我{rel}在考虑去{city}当{job}。",
    "{rel}家养了一只{pet}，叫{name}。",
    "我们可能{month}去{city}玩，还没定。",
    "{rel}对{food}过敏，吃饭要注意。",
    "{rel}最近在学{hobby}，每天都练。",
    "同事买了一辆{car}，说很省油。",
    "{rel}的工资好像是每月{amount}。",
    "{rel}{month}要去医院做{check}。",
]
ZH_SLOTS = {
    "rel": ["表哥", "姑姑", "邻居", "同事", "室友", "小姨", "堂弟", "老同学"],
    "city": ["南京", "青岛", "昆明", "西安", "大连", "长沙", "重庆", "武汉"],
    "job": ["护士", "律师", "厨师", "建筑师", "老师", "程序员", "摄影师"],
    "pet": ["金毛", "布偶猫", "仓鼠", "鹦鹉", "兔子"],
    "name": ["可乐", "年糕", "团子", "花卷", "布丁"],
    "month": ["三月", "四月", "五月", "七月", "八月"],
    "food": ["海鲜", "芒果", "牛奶", "坚果", "鸡蛋"],
    "hobby": ["游泳", "围棋", "摄影", "吉他", "瑜伽"],
    "car": ["丰田卡罗拉", "大众朗逸", "特斯拉", "本田雅阁"],
    "amount": ["一万五", "八千", "一万二", "九千五"],
    "check": ["体检", "胃镜", "牙齿矫正", "眼科检查"],
}
ZH_NEAR_REPLY = ["原来如此。", "挺好的。", "听起来不错。", "有意思。", "明白了。"]


# Assistants talk at length: everyday replies get two of these, so messages are not all short.
EN_MORE = [
    "If it helps, writing things down the evening before often makes the next day easier.",
    "A lot of people find that small, regular habits matter more than big plans.",
    "It might be worth asking around, friends often have good suggestions for this.",
    "Let me know how it goes, I am curious whether it works out for you.",
    "There is rarely one right answer, so pick what feels sustainable for you.",
    "Sometimes the simplest option turns out to be the best one in the long run.",
    "You could try it for a couple of weeks and then decide whether to keep going.",
    "Honestly, taking a short break before deciding is usually a good idea.",
]
ZH_MORE = [
    "如果需要的话，可以提前列个清单，第二天会轻松很多。",
    "很多人觉得小习惯比大计划更重要。",
    "可以问问身边的朋友，他们常常有好建议。",
    "有结果了告诉我，我也挺好奇的。",
    "这种事没有标准答案，选自己能坚持的就好。",
    "先试两周，再决定要不要继续。",
]


def chatty(rng: random.Random, reply: str, lang: str) -> str:
    more = EN_MORE if lang == "en" else ZH_MORE
    first, second = rng.sample(more, 2)
    return f"{reply} {first} {second}" if lang == "en" else f"{reply}{first}{second}"


# Chatter that uses the words partial questions share with their evidence, about other
# things: a shared word alone must not be enough.
EN_ECHO = [
    "My friend's brother keeps changing jobs every year.",
    "The kitten videos my cousin sends are endless.",
    "My throat is a bit sore from all the talking today.",
    "Our neighbour's hatchback blocks the driveway every morning.",
    "I heard the landlord might raise the rent again.",
    "A friend signed a lease on a shop for her bakery.",
    "Is it true that most people are short of vitamin C in winter?",
    "My laptop fan is so loud during video calls.",
    "My manager scheduled another meeting at 5 pm.",
    "I keep getting calls from an unknown number.",
    "The football was on all evening at the pub.",
    "There is a new bicycle lane on our street.",
    "My parents' anniversary is coming up, they want something small.",
    "A friend recommended a podcast about gardening.",
    "Standing up too quickly leaves me a bit dizzy sometimes.",
]
ZH_ECHO = [
    "邻居家的柯基又在楼道里叫。", "小时候打针前我总是哭。", "电动车的充电桩终于装好了。",
    "听说总监下个月要出差。", "爸爸最近爱看养生节目。", "早上起不来，总是迟到。",
]


def near_miss(rng: random.Random, lang: str) -> tuple[str, str]:
    templates, slots, replies = (EN_NEAR, EN_SLOTS, EN_NEAR_REPLY) if lang == "en" else (
        ZH_NEAR, ZH_SLOTS, ZH_NEAR_REPLY)
    if rng.random() < 0.25:
        return rng.choice(EN_ECHO if lang == "en" else ZH_ECHO), rng.choice(replies)
    template = rng.choice(templates)
    filled = re.sub(r"\{(\w+)\}", lambda m: rng.choice(slots[m.group(1)]), template)
    return filled, rng.choice(replies)


# -- the paraphrase check -----------------------------------------------------------------

_EN_STOP = frozenset("""
a an and are as at be been but by can could did do does doing for from had has have how i if
in into is it its me my of on or our so that the their them then there these they this to
too us was we were what when where which who why will with would you your now am any since
after about still every other such get got new whom whose much many
""".split())  # noqa: SIM905
_ZH_STOP_BIGRAMS = {"我的", "什么", "现在", "我们", "哪座", "哪种", "时候", "最近"}
_WORD = re.compile(r"[a-z0-9]+")
_HAN = re.compile(r"[\u4e00-\u9fff]+")


def _stem(word: str) -> str:
    # Stricter than Porter on purpose: any shared 5-letter prefix counts as shared.
    return word[:5]


def content_terms(text: str) -> set[str]:
    lowered = text.lower()
    words = {_stem(w) for w in _WORD.findall(lowered) if w not in _EN_STOP and len(w) > 2}
    bigrams = {run[i:i + 2] for run in _HAN.findall(text) for i in range(len(run) - 1)}
    return words | (bigrams - _ZH_STOP_BIGRAMS)


def check_paraphrase(question: str, evidence: list[str]) -> None:
    shared = content_terms(question) & set().union(*(content_terms(e) for e in evidence))
    if shared:
        raise SystemExit(f"probe {question!r} shares {sorted(shared)} with its evidence")


# -- generation ------------------------------------------------------------------------------


@dataclass
class Event:
    """A planned statement: one user message (+ reply) that some probe will ask about."""

    key: str
    user: str
    reply: str
    lang: str
    order: int = 0  # for a series item: 10 × its index + 1 (items keep their order)
    after: str = ""  # a chain's later statement: at least 3 sittings after this event's
    within: tuple[int, int] | None = None  # sittings it must go in (dated items)
    room: int = 0  # sittings to leave free at the end (a long chain's first statement)


@dataclass
class PlannedProbe:
    question: str
    evidence: list[str]  # event keys
    answer: str
    kind: str
    lang: str
    dated: bool = False  # the question has a {when} worked out where the probe goes


@dataclass
class Plan:
    events: list[Event] = field(default_factory=list)
    probes: list[PlannedProbe] = field(default_factory=list)


def plan_facts(lexical: bool = False) -> Plan:
    out = Plan()
    for lang, facts, chains, series, when in (("en", EN_FACTS, EN_CHAINS, EN_SERIES, EN_WHEN),
                                              ("zh", ZH_FACTS, ZH_CHAINS, ZH_SERIES, ZH_WHEN)):
        for key, user, reply, question, answer in facts:
            out.events.append(Event(key, user, reply, lang))
            question = LEXICAL[key] if lexical else question
            out.probes.append(PlannedProbe(question, [key], answer, "single", lang))
        for key, (u1, r1), (u2, r2), question, answer in chains:
            out.events += [Event(f"{key}-a", u1, r1, lang, room=4),
                           Event(f"{key}-b", u2, r2, lang, 1, after=f"{key}-a")]
            out.probes.append(PlannedProbe(question, [f"{key}-a", f"{key}-b"], answer, "multi",
                                           lang))
        for key, items, template in series:
            for i, (user, reply, answer) in enumerate(items):
                out.events.append(Event(f"{key}-{i}", user, reply, lang, i * 10 + 1))
                out.probes.append(PlannedProbe(template.format(when=when[i]), [f"{key}-{i}"],
                                               answer, "temporal", lang))
    for lang, facts, chains3, dated in (("en", EN_FACTS, EN_CHAINS3, EN_DATED),
                                        ("zh", ZH_FACTS, ZH_CHAINS3, ZH_DATED)):
        for key, *_ in facts:
            if key in PARTIAL:
                answer = next(f[4] for f in facts if f[0] == key)
                out.probes.append(PlannedProbe(PARTIAL[key], [key], answer, "partial", lang))
        for key, steps, question, answer in chains3:
            keys = [f"{key}-{i}" for i in range(len(steps))]
            for i, (user, reply) in enumerate(steps):
                out.events.append(Event(keys[i], user, reply, lang, after=keys[i - 1] if i else "",
                                        room=0 if i else 4 * len(steps)))
            out.probes.append(PlannedProbe(question, keys, answer, "multi", lang))
        for key, items, template in dated:
            for i, (user, reply, answer) in enumerate(items):
                out.events.append(Event(f"{key}-{i}", user, reply, lang,
                                        within=DATED_WINDOWS[i]))
                out.probes.append(PlannedProbe(template, [f"{key}-{i}"], answer, "dated", lang,
                                               dated=True))
    return out


def check_partial(question: str, evidence: str, answer: str) -> None:
    shared = content_terms(question) & content_terms(evidence)
    if not shared or len(shared) * 2 > len(content_terms(question)) or answer in question:
        raise SystemExit(f"partial probe {question!r} shares {sorted(shared)} with its evidence")


def generate(seed: int = 7, sittings: int = 80, *, lexical: bool = False
             ) -> list[dict[str, object]]:
    rng = random.Random(seed)
    plan = plan_facts(lexical)
    events = {e.key: e for e in plan.events}
    for probe in plan.probes:
        if probe.kind == "partial":
            check_partial(probe.question, events[probe.evidence[0]].user, probe.answer)
        elif not (lexical and probe.kind == "single"):
            check_paraphrase(probe.question.replace("{when}", ""),
                             [events[k].user for k in probe.evidence])

    # Place events into sittings: a chain's second half and a series' later items come later.
    langs = ["zh" if rng.random() < 0.35 else "en" for _ in range(sittings)]
    slots: dict[int, list[Event]] = {i: [] for i in range(sittings)}
    placed: dict[str, int] = {}
    usable = int(sittings * 0.8)  # the last sittings are for probing what came before
    for event in plan.events:  # in plan order: a chain's first half, a series' first item first
        lowest, highest = 0, usable - event.room
        if event.after:
            lowest = placed[event.after] + 3
        elif event.within:
            lowest, highest = event.within
        elif event.order:  # series item i goes in the i-th third of the conversation
            third = event.order // 10
            lowest, highest = third * usable // 3, (third + 1) * usable // 3
        window = range(lowest, highest)
        # A crowded or empty window (a chain's first half placed late) takes the next free room.
        choices = [i for i in window if langs[i] == event.lang and len(slots[i]) < 2] or \
                  [i for i in window if len(slots[i]) < 3] or \
                  [i for i in range(min(lowest, sittings - 1), sittings) if len(slots[i]) < 3] or \
                  [sittings - 1]
        index = rng.choice(choices)
        slots[index].append(event)
        placed[event.key] = index

    start = datetime(2025, 12, 12, 8, 0, tzinfo=UTC)
    clock = start
    lines: list[dict[str, object]] = [{
        "chatmem": 1, "title": f"recall benchmark (seed {seed})",
        "system": "You are a helpful assistant. Answer briefly.",
    }]
    ids: dict[str, str] = {}
    said: dict[str, datetime] = {}
    turn = 0
    sitting_end: list[int] = []
    sitting_time: list[datetime] = []
    for index in range(sittings):
        clock += timedelta(days=rng.randint(1, 3), hours=rng.randint(0, 10))
        clock = clock.replace(hour=rng.randint(7, 20), minute=rng.randint(0, 59))
        lang = langs[index]
        fillers = (EN_FILLER_USER, EN_FILLER_REPLY) if lang == "en" else (ZH_FILLER_USER,
                                                                           ZH_FILLER_REPLY)
        count = rng.randint(4, 7)
        statements = list(slots[index])
        positions = sorted(rng.sample(range(count), min(len(statements), count)))
        for step in range(count):
            turn += 1
            if statements and positions and step == positions[0]:
                positions.pop(0)
                event = statements.pop(0)
                user, reply = event.user, event.reply
                ids[event.key] = f"t{turn}u"
                said[event.key] = clock
            elif rng.random() < 0.5:
                user, reply = near_miss(rng, lang)
                reply = chatty(rng, reply, lang)
            else:
                pick = rng.randrange(len(fillers[0]))
                user, reply = fillers[0][pick], chatty(rng, fillers[1][pick], lang)
            lines.append({"role": "user", "content": user, "id": f"t{turn}u",
                          "ts": clock.isoformat()})
            clock += timedelta(minutes=rng.randint(1, 4))
            lines.append({"role": "assistant", "content": reply, "id": f"t{turn}a",
                          "ts": clock.isoformat()})
            clock += timedelta(minutes=rng.randint(1, 6))
        sitting_end.append(len(lines))
        sitting_time.append(clock)

    # Probes go after their evidence, at least 30 turns later, most at the end.
    probe_at: dict[int, list[dict[str, object]]] = {}
    for probe in plan.probes:
        last = max(placed[k] for k in probe.evidence)
        candidates = [i for i in range(last + 6, sittings)]
        where = rng.choice(candidates) if candidates and rng.random() < 0.4 else sittings - 1
        question = probe.question
        if probe.dated:
            [key] = probe.evidence
            series = key.rsplit("-", 1)[0]
            now = sitting_time[where]
            others = [t for k, t in said.items()
                      if k != key and k.rsplit("-", 1)[0] == series and t < now]
            phrases = when_phrases(probe.lang, said[key], now, others)
            if not phrases:
                where, now = sittings - 1, sitting_time[-1]
                phrases = when_phrases(probe.lang, said[key], now, others)
            if not phrases:
                raise SystemExit(f"no way to name when {key!r} was said at {now:%Y-%m-%d}")
            question = question.format(when=rng.choice(phrases))
        probe_at.setdefault(sitting_end[where], []).append({
            "probe": question, "expect_ids": [ids[k] for k in probe.evidence],
            "expect_text": [probe.answer], "kind": probe.kind, "lang": probe.lang,
        })
    out: list[dict[str, object]] = []
    for number, line in enumerate(lines, 1):
        out.append(line)
        out.extend(probe_at.get(number, []))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sittings", type=int, default=80)
    parser.add_argument("--lexical", action="store_true",
                        help="ask single facts with a word of their statement (see LEXICAL)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n"
                   for line in generate(args.seed, args.sittings, lexical=args.lexical))
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()

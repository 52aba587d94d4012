"""Sample (a): a 30-turn English support conversation (written for chatmem).

The order number, the customer's name and the agent's promise all come in
the first four turns; the probes at the end check whether a memory kept them.
"""

SYSTEM = "You are Ava, a support agent for Kettleworks, a kitchen appliance shop. Be concise."

TURNS = [
    ("Hi, my new blender arrived with a cracked jug. I'd like some help please.",
     "I'm sorry to hear that! I can help. Could you give me your order number and the name "
     "on the order?"),
    ("Sure, the order number is KW-58213 and it's under Dana Whitfield.",
     "Thank you, Dana. I found order KW-58213: one Kettleworks ProBlend 900, delivered "
     "on Monday."),
    ("The jug has a crack running down from the spout. It leaks when I fill it past half.",
     "That should never happen. A cracked jug is covered by our arrival guarantee, so you "
     "won't pay for anything."),
    ("So what happens now? I need a blender this week, I'm hosting a brunch on Saturday.",
     "Here is my promise: a replacement jug ships by Thursday, March 12 by free express "
     "courier, and I'm adding a 15% refund with the code SORRY15 for the trouble."),
    ("Thursday works. Do I need to send the cracked jug back first?",
     "No, keep it until the replacement arrives. We'll email a prepaid return label "
     "afterwards."),
    ("Great. Is the base okay to use in the meantime?",
     "Yes, the motor base is fine. Just don't run it without a jug seated: the safety "
     "switch stops it anyway."),
    ("Got it. While I have you, how do I clean the blades properly?",
     "Fill the jug halfway with warm water and a drop of dish soap, run it on pulse for ten "
     "seconds, then rinse. Never put your hand inside."),
    ("Can the jug go in the dishwasher?",
     "The replacement jug is dishwasher safe on the top rack. The lid seal should be washed "
     "by hand."),
    ("What about the tamper stick that came with it?",
     "The tamper is top-rack safe too. Use it only through the lid opening while blending "
     "thick mixtures."),
    ("I want to make frozen margaritas for the brunch. Which program should I use?",
     "Use the Ice Crush program, then Smoothie for twenty seconds. Add the liquid first and "
     "the ice last."),
    ("How much ice can it handle at once?",
     "Up to four cups of ice with at least one cup of liquid. More than that strains the "
     "motor."),
    ("And if I want to make hot soup?",
     "The ProBlend 900 can blend hot soup, but leave the lid cap off a crack so steam can "
     "escape, and never fill it past the 1.5 litre mark."),
    ("Is there a warranty on the motor?",
     "The motor base has a seven-year warranty. Registering the product online extends "
     "it by one more year."),
    ("Where do I register it?",
     "On kettleworks.example/register. You'll need the serial number from the sticker under "
     "the base."),
    ("Found it, the serial is PB9-00417-X. Do I need the receipt too?",
     "No receipt needed: the serial and your order are linked already."),
    ("Okay. By the way, my sister wants the same blender. Is it on sale?",
     "It's 10% off until the end of the month. The discount can't be combined with your "
     "refund code, though."),
    ("Fair enough. Does it come in other colours?",
     "It comes in graphite, cream and sage green."),
    ("She'll probably want sage. How long is delivery normally?",
     "Standard delivery takes three to five working days; express takes one to two."),
    ("Good to know. Can I change the delivery address for my replacement?",
     "I can, as long as it hasn't shipped yet. What address would you like?"),
    ("Actually no, keep it the same. I'll be home all week.",
     "Noted, the address stays as it is."),
    ("What if the courier comes while I'm out anyway?",
     "They'll leave a card and try again the next working day, or you can pick it up from "
     "the depot."),
    ("Can I track the parcel?",
     "Yes, you'll get a tracking link by email and text as soon as it's handed to the "
     "courier."),
    ("My phone number on the order is old. Can you use 07700 900123 instead?",
     "Updated: texts will go to 07700 900123 from now on."),
    ("Thanks. One more thing, the manual was missing from the box.",
     "You can download the manual as a PDF from the product page, or I can post a printed "
     "copy."),
    ("PDF is fine.",
     "I've emailed you the link to the PDF manual."),
    ("Got it, thanks. Is there a recipe book too?",
     "There's a free recipe booklet on the same page, with forty recipes including three "
     "margaritas."),
    ("Perfect for Saturday then.",
     "Enjoy the brunch! Is there anything else I can help with?"),
    ("I think that's everything. Sorry, I've been asking a lot.",
     "Not at all, that's what I'm here for."),
    ("Can you send me a summary of what we agreed by email?",
     "Of course. I've sent a summary of this conversation to the email on your order."),
    ("Wonderful, thank you Ava. Have a nice day!",
     "You too! Goodbye."),
]

# (after turn, question, expected message ids, expected text)
PROBES = [
    (10, "Remind me, when will my replacement ship?", ["t4a"], ["March 12"]),
    (30, "What was my order number again?", ["t2u"], ["KW-58213"]),
    (30, "Whose name is the order under?", ["t2u"], ["Dana Whitfield"]),
    (30, "What exactly did you promise me about the replacement?", ["t4a"],
     ["March 12", "free express", "SORRY15"]),
    (30, "What is wrong with the item I received?", ["t3u"], ["crack"]),
    (30, "Which number should you text me on?", ["t23u"], ["07700 900123"]),
]

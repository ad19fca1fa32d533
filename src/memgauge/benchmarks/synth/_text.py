"""Conversation text: one session generator for evidence and haystack alike.

Evidence and haystack sessions come from the same topics, lengths and turn templates; a
session that carries a needle differs only in which image it shares and what the user says
about it (indirectly, never restating the image's content). That keeps evidence sessions
indistinguishable from haystack ones by construction.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

TOPICS: dict[str, dict[str, list[str]]] = {
    # user[i] and assistant[i] are one exchange: the reply answers that line, and a slot
    # ({city}, {dish}, ...) takes the same value on both sides.
    "travel": {
        "user": [
            "I'm thinking about a long weekend in {city}. Is {month} a good time to go?",
            "We finally booked the trip to {city}. What should we not miss there?",
            "How do I keep my luggage light on a trip of {n} days?",
            "Is it worth renting a car in {city}, or is public transport fine?",
            "My flight to {city} leaves early. Any tips for sleeping before a dawn departure?",
            "What's a good way to spend a rainy afternoon in {city}?",
            "Do I need to book restaurants in {city} ahead in {month}?",
            "We have {n} days in {city}. Too many for one city?",
        ],
        "assistant": [
            "{city} in {month} is usually pleasant; mornings can be cool, so pack a light layer.",
            "In {city} I'd plan one slow day for the old town and one for a day trip nearby.",
            "For {n} days, roll your clothes and stop at two pairs of shoes; that saves a lot of "
            "space.",
            "Public transport in {city} is reliable; a car mostly helps for the countryside.",
            "For an early flight to {city}, lay everything out the night before and keep your "
            "documents in one pocket.",
            "In {city}, museums and covered markets are good bets when it rains.",
            "For dinners in {city} in {month}, booking a day or two ahead is usually enough.",
            "{n} days in {city} is comfortable: leave one of them unplanned.",
        ],
    },
    "cooking": {
        "user": [
            "I want to try making {dish} this week. Any advice for a beginner?",
            "My {dish} came out a bit dry last time. What did I do wrong?",
            "Can I prepare {dish} a day ahead and reheat it?",
            "What goes well with {dish} as a side?",
            "I'm cooking for {n} people on Saturday. How much {ingredient} should I buy?",
            "Is {dish} hard to make without an oven?",
            "I have leftover {ingredient}. What can I do with it?",
            "How long does {dish} keep in the fridge?",
        ],
        "assistant": [
            "The first time you make {dish}, start simple and taste as you go.",
            "Dry {dish} usually means a little too much heat or time; "
            "try lowering the temperature.",
            "You can: {dish} is often better the next day.",
            "A crisp salad with a sharp dressing goes well with {dish}.",
            "For {n} people, plan a generous handful of {ingredient} each and a little extra for "
            "seconds.",
            "Some people make {dish} in a heavy pan on the hob; it takes a bit more stirring.",
            "Leftover {ingredient} is great in a quick soup or a bake.",
            "Covered, {dish} keeps two or three days in the fridge.",
        ],
    },
    "shopping": {
        "user": [
            "I keep buying things on impulse at {store}. How do I stop?",
            "Is it better to buy a new {item} online or in a shop?",
            "I picked up a few things at {store} today.",
            "Do you think {store} is more expensive than the market down the road?",
            "I'm trying to track what I spend on small things in {month}.",
            "My old {item} finally broke. Should I repair it or buy new?",
            "Are sales at {store} ever worth waiting for?",
            "I returned a {item} I didn't need. Was that silly?",
        ],
        "assistant": [
            "A 24-hour rule helps at {store}: if you still want it tomorrow, it's probably worth "
            "it.",
            "For a {item}, a shop lets you check the quality; online is easier for comparing "
            "prices.",
            "Keeping the receipts from {store} makes it much easier to see where the money goes.",
            "{store} varies by item; staples are often cheaper at markets, brands at chains.",
            "For {month}, a simple note with date, place and amount is enough to spot patterns.",
            "If repairing the {item} costs less than half of a new one, I'd repair it.",
            "For things you need anyway, waiting for a sale at {store} can pay off.",
            "Not silly at all: returning a {item} you don't use is money back.",
        ],
    },
    "pets": {
        "user": [
            "My neighbour asked me to look after their {pet} for a few days.",
            "How often should a {pet} go to the vet for a check-up?",
            "We are thinking about adopting a {pet}. Is it a lot of work?",
            "The {pet} keeps waking me up at night. Any ideas?",
            "What's a good toy for a bored {pet}?",
            "Our {pet} seems off its food today.",
            "Can I leave a {pet} alone for a weekend?",
            "How do I get a {pet} used to a new home?",
        ],
        "assistant": [
            "Ask them for the {pet}'s feeding routine and the vet's number before they leave.",
            "Once a year is typical for a healthy adult {pet}; more often when they get older.",
            "A {pet} is a commitment, but a steady routine makes it much easier.",
            "A late play session and a consistent bedtime often help a {pet} settle.",
            "For a {pet}, puzzle feeders and anything it can chase tend to be favourites.",
            "One day off its food is common for a {pet}; call the vet if it lasts longer.",
            "I wouldn't leave a {pet} alone that long; a neighbour dropping by helps.",
            "Give the {pet} one quiet room first and let it explore from there.",
        ],
    },
    "plants": {
        "user": [
            "My balcony gets a lot of afternoon sun from {month} on. What should I grow there?",
            "The leaves on my {plant} are turning yellow.",
            "How often should I water the {plant} in {month}?",
            "I repotted my {plant} this weekend.",
            "Is my {plant} hard to keep alive if I forget to water it?",
            "My {plant} is leaning towards the window.",
            "Should I feed my {plant} in {month}?",
            "Someone gave me a new {plant}. Where should I put it?",
        ],
        "assistant": [
            "From {month}, herbs like rosemary and thyme will love it and forgive a dry spell.",
            "Yellow leaves on your {plant} often mean too much water; let the soil dry out a bit.",
            "Check the {plant}'s soil with a finger; water when the top few centimetres are dry.",
            "Give the {plant} a week out of direct sun while the roots settle.",
            "Your {plant} forgives the odd missed watering; just don't let it sit in water.",
            "Turn the {plant} a quarter turn every week and it will grow straighter.",
            "In {month}, a light feed once a month is plenty for your {plant}.",
            "Bright light without harsh midday sun suits your {plant} best.",
        ],
    },
    "fitness": {
        "user": [
            "I started {activity} again after a long break. How much should I do at first?",
            "My knees hurt after {activity}. Should I worry?",
            "What's a good warm-up before {activity}?",
            "I want to be able to do {activity} for an hour by {month}.",
            "Is {activity} every day too much?",
            "I missed a week of {activity}. Do I start over?",
            "What should I eat before {activity} in the morning?",
            "Is {activity} on a {weekday} evening a good habit?",
        ],
        "assistant": [
            "Keep the first few {activity} sessions short and easy; build up by about ten percent "
            "a week.",
            "Good shoes and a gentler pace help after {activity}; see someone if it persists.",
            "Before {activity}, five minutes of easy movement and a few dynamic stretches is "
            "plenty.",
            "For an hour of {activity} by {month}, add a little time each week and keep one day "
            "easy.",
            "Light days of {activity} count; hard sessions need a rest day after them.",
            "After a week off {activity}, pick up a little below where you were.",
            "Something small and easy, like a banana or toast, an hour before {activity} works for "
            "most people.",
            "A fixed {weekday} slot for {activity} makes it much easier to keep going.",
        ],
    },
    "work": {
        "user": [
            "I have a presentation on {weekday}. How do I keep it short?",
            "My inbox has been out of control since {weekday}.",
            "How do I ask my manager for a day off on {weekday}?",
            "I keep getting distracted on {weekday} afternoons.",
            "We're moving offices in {month} and I have to pack my desk.",
            "I have {task} due on {weekday} and haven't started.",
            "A colleague keeps booking meetings over lunch on {weekday}s.",
            "Should I take on {task} as well?",
        ],
        "assistant": [
            "For {weekday}, pick three points and cut everything that doesn't support them.",
            "Sort by sender first, archive anything from before {weekday}, then reply in batches.",
            "Be direct about {weekday} and mention how your work will be covered.",
            "On {weekday}s, a short walk after lunch and one clear task per hour can help.",
            "For the move in {month}, label the boxes by what you need first, not by where things "
            "were.",
            "Split {task} into pieces and do the first one today; {weekday} will look less scary.",
            "Block {weekday} lunch in your calendar; most people respect a visible slot.",
            "Only take on {task} if something else can move; say what would slip.",
        ],
    },
    "home": {
        "user": [
            "A tap in the {wet_room} keeps dripping. Can I fix it myself?",
            "We're repainting the {room}. Any tips?",
            "How do I get rid of the damp smell in a {room} cupboard?",
            "I finally cleared out the {room} this weekend.",
            "What's the easiest way to keep the fridge organised when I shop on {weekday}s?",
            "The {room} always feels cold in {month}.",
            "How often should I deep-clean the {room}?",
            "We want to make the {room} feel bigger.",
        ],
        "assistant": [
            "A dripping tap in the {wet_room} is usually a worn washer; turn the water off at the "
            "valve first.",
            "For the {room}, tape the edges well and do two thin coats rather than one thick one.",
            "Air the {room} cupboard out, wipe it with diluted vinegar and leave a bowl of baking "
            "soda.",
            "Great job. Keeping one shelf in the {room} empty makes it easier to stay tidy.",
            "Unpack by type on {weekday} and put what expires first at the front.",
            "Check the {room} windows for draughts first; a strip of seal is cheap.",
            "A proper clean of the {room} once a season is plenty if you tidy weekly.",
            "Light colours and one big mirror make a {room} feel larger.",
        ],
    },
    "events": {
        "user": [
            "I'm going to hear some live {genre} soon and I'm really excited.",
            "Have you heard of the {genre} festival this year?",
            "I bought tickets for something fun in {month}.",
            "Do you think it's worth paying for better seats for {genre}?",
            "What should I bring to an outdoor {genre} event?",
            "My friend wants to go out for {genre} on {weekday}.",
            "Is it weird to go and hear {genre} alone?",
            "The {genre} show sold out before I could book.",
        ],
        "assistant": [
            "Live {genre} sounds fun. Arriving early usually means shorter queues.",
            "The {genre} festival is popular; people say the evening sets are the best.",
            "Nice! Keep the tickets for {month} somewhere safe so you can find them on the day.",
            "For {genre} you care about, a better view often makes the evening.",
            "For an outdoor {genre} event: water, a light jacket and a charged phone.",
            "Live {genre} on {weekday} is a nice way to break up the week.",
            "Not at all; lots of people go alone and enjoy the {genre} more.",
            "Sold-out {genre} shows often release returns a day or two before.",
        ],
    },
    "family": {
        "user": [
            "My {relative} is visiting next weekend. What could we do together?",
            "It's my {relative}'s birthday in {month} and I have no idea what to get.",
            "I had a long call with my {relative} yesterday.",
            "We're planning a small family dinner for {n} people.",
            "My {relative} gave me something nice last week.",
            "I haven't seen my {relative} since {month}.",
            "My {relative} wants to learn {activity}.",
            "My {relative} is moving to {city}.",
        ],
        "assistant": [
            "With your {relative}, a relaxed lunch and a walk somewhere new is hard to beat.",
            "For your {relative}, something tied to a shared memory tends to land well.",
            "It's lovely to stay in touch with your {relative} like that.",
            "For {n} people, keep the menu simple so you can enjoy the evening too.",
            "That's thoughtful of your {relative}.",
            "Maybe plan a visit to your {relative}; it's been a while since {month}.",
            "{activity} is a nice thing to start with your {relative}, if you have the time.",
            "{city} is lovely; you'll have a good reason to visit your {relative}.",
        ],
    },
}

# Follow-up exchanges: the user's line and a reply that answers it (drawn as a pair, so the
# assistant never answers a question nobody asked).
FOLLOW_UPS: list[tuple[str, str]] = [
    ("That makes sense, thanks.", "You're welcome. Small steps add up."),
    ("Good point, I hadn't thought of that.", "It's easy to miss until it trips you up once."),
    ("Okay, I'll try that this week.", "Sounds like a sensible plan."),
    ("Do you have any other suggestions?",
     "Keeping a short note of what worked will save you time next time."),
    ("What would you do in my place?",
     "I'd keep it simple to begin with and adjust from there."),
    ("Interesting. How long does that usually take?",
     "It usually takes a couple of tries to get right, so give it a few weeks."),
    ("I'll let you know how it goes.", "Please do, I'd like to hear how it turns out."),
    ("Is there anything I should avoid?",
     "Avoid rushing it; most problems come from doing too much at once."),
    ("Thanks, that's really helpful.", "Glad it helps."),
    ("Hmm, I'm not sure I have the time for that.",
     "Then pick the one part that matters most and leave the rest for later."),
    ("Would it be cheaper to do it that way?", "Usually, yes, once you count the time saved."),
    ("My friend said the opposite, though.",
     "People's experience varies; try it once and see what suits you."),
    ("Right, that's roughly what I expected.", "Then you're already on the right track."),
    ("Should I ask someone to help me with it?",
     "If someone has done it before, an extra pair of hands makes it easier."),
    ("I tried something like that last year.", "What was different about it last time?"),
    ("That sounds like a lot of work.", "It looks like more than it is once you start."),
    ("Is it worth spending a bit more on it?",
     "If you'll use it often, paying a little more usually pays off."),
    ("How do I know if it's working?", "Give it two weeks and compare with how it was before."),
    ("I always forget to do that.", "A reminder on your phone at the same time each day helps."),
    ("Can I do it on a weekend?", "Sure, a quiet Saturday morning is a good time for it."),
    ("That's more or less what I was planning.", "Then go for it; you've thought it through."),
    ("I'm a bit nervous about getting it wrong.",
     "Everyone gets it a little wrong the first time; that's how you learn what works."),
    ("What if it doesn't work out?", "Then you'll know more for the next attempt."),
    ("Do people usually find that hard?", "Not really, once they've done it once or twice."),
    ("Okay, I'll think about it.", "No rush, it will keep."),
    ("You're right, I was overcomplicating it.", "It happens to all of us."),
    ("Where would you start?", "With the smallest step you can finish today."),
    ("That's a good idea, actually.", "Glad it sounds useful."),
    ("How did you know that?", "It comes up a lot; it's a common question."),
    ("Is that what most people do?", "Most people I hear about do something like it, yes."),
    ("I'll ask around and see what others think.", "Good idea; a second opinion never hurts."),
    ("Can you remind me about it later?", "I can't send reminders, but a note on your phone will "
                                          "do it."),
    ("That's easier than I thought.", "Often the hardest part is starting."),
    ("What's the most common mistake?", "Trying to do everything at once."),
    ("I'll have to check my budget first.", "Sensible; better to know the numbers before you "
                                            "decide."),
    ("Would you recommend it to a friend?", "If they have the time for it, yes."),
    ("Okay, and after that?", "Then see how it feels and adjust the next step."),
    ("I might need a bit more time to decide.", "Take the time you need; nothing here is urgent."),
    ("Would doing it in the evening work as well?", "Evenings are fine, as long as you're not too "
                                                    "tired."),
    ("Does it matter which order I do it in?", "Start with whatever the rest depends on."),
    ("I've heard mixed things about that.",
     "Opinions differ; what matters is whether it suits you."),
    ("How much should I expect to spend?", "Set a limit first, then see what fits within it."),
    ("Is it okay to skip a week now and then?", "Yes; one missed week changes very little."),
    ("I keep putting it off.", "Pick a time in the diary and treat it like an appointment."),
    ("Do I need any special equipment?", "Not at first; borrow what you can until you're sure."),
    ("That's what my partner suggested too.", "Then you have two votes for it already."),
    ("Should I write it down somewhere?", "A short list on your phone is plenty."),
    ("What if I run out of time halfway?", "Stop at a natural break and pick it up the next day."),
    ("Is it better to do a little every day?", "Little and often usually beats one long push."),
    ("I did something similar at my old flat.", "Then you already know most of what you need."),
    ("How will I know when it's done?", "When it stops needing your attention every day."),
    ("Can I change my mind later?", "Almost always; very little of this is final."),
    ("I'm worried it will take over my weekend.", "Give it a fixed two hours and stop there."),
    ("Do you think I'm overthinking this?", "A little, maybe; it's a small decision."),
    ("My neighbour does it differently.", "There are several good ways; pick the one you'll keep "
                                          "up."),
    ("Could I ask a friend to join me?", "Yes, company makes it easier to stick with."),
    ("Would it help to plan it in advance?", "A rough plan helps; a detailed one rarely survives."),
    ("I'm not very good at this kind of thing.", "Most people aren't at first; it gets easier "
                                                 "quickly."),
    ("Is there a cheaper way?", "Often, if you're willing to spend a bit more time on it."),
    ("What's the first thing I should do?", "Decide what a good result would look like."),
    ("I'll give it a go on Saturday.", "Good plan; let me know how Saturday goes."),
    ("Does the weather make a difference?", "A little; a dry day makes it more pleasant."),
    ("I think I've been doing it wrong.", "Then this is a good moment to reset."),
    ("How often should I check on it?", "Once a week is usually enough."),
    ("Would you do it all at once or in stages?", "In stages; it's easier to fix one step at a "
                                                  "time."),
    ("That's a relief, honestly.", "Good; it's rarely as bad as it seems beforehand."),
    ("Is it normal to feel a bit unsure?", "Completely; being unsure just means you're paying "
                                           "attention."),
    ("I wish I'd asked sooner.", "Better now than not at all."),
    ("Let me think about how to fit it in.", "Sure; even a small slot in the week will do."),
    ("What do most people get wrong about it?", "They expect quick results and stop too early."),
    ("Sounds simple enough.", "It is; the trick is doing it regularly."),
    ("Okay, that clears it up.", "Good, glad that's settled."),
    ("Could it go wrong in any way?", "Only in small ways you can fix as you go."),
    ("I'll try and keep it short.", "Short is good; you can always add more later."),
    ("Should I tell anyone else about it?", "Only the people it affects."),
    ("That's the part I was unsure about.", "It's the part most people ask about."),
    ("Good to hear it's not just me.", "Not at all; it comes up all the time."),
    ("Fair enough.", "Anything else on your mind?"),
    ("That's reassuring, thanks.", "Good; it usually works out fine."),
]
# Said before a user's line or after a reply now and then, as people do; every session's
# chat draws them alike, so they vary the text without telling one kind of session apart.
LEAD_INS = ["Quick question.", "Hi again!", "Hey.", "Morning!", "Something else on my mind.",
            "Okay, next thing.", "Hope you're well.", "Sorry, one more thing."]
TAILS = ["Hope that helps.", "Let me know how it goes.", "Happy to say more if useful.",
         "Good luck!", "Shout if you want more detail.", "Just my two cents.",
         "Take it at your own pace."]
VARY_RATE = 0.4  # how often a chat line gets a lead-in or a tail
TOPIC_RATE = 0.75  # how often an exchange after the first is the topic's (else a follow-up)
# Many values each, so that no slot value is in many sessions: one set per conversation,
# echoed by the reply, makes them heavy words, and a value in dozens of sessions of either
# kind is noise a classifier can fit (at 40 questions it moved the gate's AUC by ±0.1; 0041).
SLOTS: dict[str, list[str]] = {
    "city": ["Lisbon", "Valencia", "Oslo", "Tallinn", "Bologna", "Ghent", "Seville", "Krakow",
             "Lyon", "Nara", "Graz", "Antwerp", "Utrecht", "Aarhus", "Gdansk", "Ljubljana",
             "Zagreb", "Verona", "Turin", "Salzburg", "Innsbruck", "Bordeaux", "Nantes",
             "Malaga", "Bilbao", "Coimbra", "Edinburgh", "York", "Bruges", "Leipzig",
             "Dresden", "Riga", "Vilnius", "Helsinki", "Gothenburg", "Trieste", "Lucca",
             "Granada", "Basel", "Lille"],
    "month": ["March", "April", "May", "June", "July", "August", "September", "October",
              "November"],
    "n": ["3", "4", "5", "6", "7", "8", "10", "12"],
    "dish": ["lasagne", "lentil curry", "banana bread", "risotto", "fish pie", "shakshuka",
             "dumpling soup", "tarte tatin", "paella", "moussaka", "ramen", "chilli",
             "shepherd's pie", "carrot cake", "minestrone", "pad thai", "goulash", "gnocchi",
             "falafel", "apple crumble", "quiche", "tagine", "pancakes", "brownies"],
    "ingredient": ["rice", "pasta", "potatoes", "cheese", "bread", "couscous", "lentils",
                   "spinach", "mushrooms", "chickpeas", "noodles", "polenta"],
    "item": ["desk lamp", "rain jacket", "kettle", "toaster", "blender", "coffee grinder",
             "bike helmet", "suitcase", "hairdryer", "wall clock", "printer", "steam iron",
             "speaker", "rucksack", "duvet"],
    "store": ["the corner shop", "the market", "the big supermarket", "the bakery",
              "the farm shop", "the discount store",
              "the organic shop", "the garden centre", "the shopping centre"],
    "pet": ["cat", "dog", "rabbit", "parrot", "hamster", "guinea pig", "tortoise", "budgie"],
    "activity": ["swimming", "cycling", "yoga", "rowing", "climbing", "running", "pilates",
                 "tennis", "hiking", "dancing", "boxing", "badminton"],
    "weekday": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "genre": ["jazz", "folk", "indie", "classical", "electronic", "blues", "opera", "reggae",
              "punk", "soul", "country", "hip hop"],
    "relative": ["sister", "brother", "cousin", "aunt", "uncle", "grandmother", "grandfather",
                 "niece", "nephew", "godmother", "stepbrother", "mother-in-law"],
    "plant": ["basil", "fern", "monstera", "cactus", "orchid", "peace lily", "spider plant",
              "rosemary", "aloe vera", "snake plant", "pothos", "fiddle-leaf fig", "jade plant",
              "lavender", "mint", "begonia", "rubber plant", "calathea", "ivy", "geranium"],
    "wet_room": ["kitchen", "bathroom", "utility room", "downstairs toilet", "en-suite"],
    "room": ["kitchen", "bathroom", "living room", "hallway", "bedroom", "spare room",
             "study", "loft", "shed", "dining room"],
    "task": ["the quarterly report", "the budget review", "the client slides", "the team rota",
             "the project plan", "the hiring plan", "the training notes", "the sales forecast",
             "the user survey", "the launch checklist", "the audit file", "the onboarding guide"],
}

# What a user says when sharing an image of each kind: indirect, never the content itself.
SHARE_LINES: dict[str, list[str]] = {
    "receipt": ["Here's the receipt from {place} today <image>", "Kept the receipt from {place} "
                                                                 "<image>",
                "Just got back from {place}, receipt attached <image>",
                "Another receipt from {place} for my records <image>",
                "Stopped by {place} on the way home, here's the receipt <image>"],
    "ticket": ["Look what I just booked <image>", "Tickets are sorted <image>",
               "Got my ticket for {place} <image>"],
    "label": ["This is the one I picked up <image>", "Found this at {place} <image>",
              "Trying this one now <image>"],
    "calendar": ["I marked it on my calendar <image>", "Put it in the calendar <image>"],
    "schedule": ["Here's the plan for the day <image>", "This is what the day looks like <image>"],
    "clock": ["Quick photo of the clock <image>", "Checking the time <image>"],
    "chat": ["Look at this message I got <image>", "Screenshot of the chat <image>"],
    "app_ui": ["Here's a screenshot from the app <image>", "This is what the app shows <image>"],
    "scene": ["This is how the table looks right now <image>", "Photo of the shelf <image>"],
    "entity": ["Look at this <image>", "Here's a photo <image>", "Snapped this earlier <image>"],
}
# Lines that tie an image to something a question asks about. Evidence and haystack draw
# from the same templates (haystack with other fillers), so wording never marks evidence.
LINES: dict[str, str] = {
    "label_morning": "This is the {product} I've been having every morning <image>",
    "article": "I read an article about {product} makers: {facts}.",
    "booking": "Finally booked somewhere to stay, here's the confirmation <image>",
    "parcel": "My parcel is on its way, screenshot from the app <image>",
    "parking_first": "Parked the car, saving the spot <image>",
    "parking_move": "Had to move the car again, new spot <image>",
    "parking_first_of": "Parked the {vehicle}, saving the spot <image>",
    "parking_move_of": "Had to move the {vehicle} again, new spot <image>",
    "collection": "Another photo for my {kind} collection <image>",
    "visitor": "{owner} came over today and brought their {kind} along <image>",
    "named": "This is {name}, the {kind} from down the street <image>",
    "clock_start": "Starting {activity} now <image>",
    "clock_end": "Finished {activity} <image>",
    "ticket": "Got tickets for {event} <image>",
    "calendar": "I marked the day of my {what} <image>",
    "arranged": "Here's how I arranged the {thing} on the table <image>",
    "someone_else": "Screenshot of {owner}'s {what} from the same app <image>",
    "desk_first": "This is the {kind} that sits on my desk these days <image>",
    "desk_swap": "Swapped the {kind} on my desk for another one <image>",
    "locker_first": "Got a locker at the {place}, here's the app screen <image>",
    "locker_change": "The {place} reset my locker code again <image>",
    # the MemEye export's update chains say an update in one of several ways (see CHAINS)
    "parking_move_of_bay": "Moved the {vehicle} to another bay today <image>",
    "parking_move_of_spot": "The {vehicle} is in a different spot now <image>",
    "locker_change_new": "New code for my {place} locker, here's the app screen <image>",
    "locker_change_today": "Changed the code on my {place} locker today <image>",
    "desk_swap_new": "There's a different {kind} on my desk now <image>",
    "desk_swap_replaced": "Replaced the {kind} on my desk this week <image>",
}
# Other wordings of a line a question's sessions say several times (the k-th session takes
# variant k, from a random start), so no episode holds one of them more than twice.
LINE_VARIANTS: dict[str, tuple[str, ...]] = {
    "collection": ("Adding this one to my {kind} collection <image>",
                   "One more {kind} for the collection <image>",
                   "Took a photo of another {kind} from my collection <image>",
                   "The {kind} collection keeps growing <image>",
                   "New addition to my {kind} collection <image>",
                   "Look what joined the {kind} collection <image>"),
    "clock_start": ("About to start {activity} <image>", "Beginning {activity} now <image>",
                    "Heading into {activity}, time check <image>"),
    "clock_end": ("Done with {activity} <image>", "Just finished {activity} <image>",
                  "That's {activity} over with <image>"),
    "parcel": ("Tracking screenshot for my parcel <image>",
               "The app says my parcel is on the way <image>",
               "Parcel update from the app <image>"),
    # (one wording each, the lines of a question's evidence and of its decoy were the same
    # few words among most of the other sessions of an 8k tier: seed 19, design 0041)
    "calendar": ("Circled my {what} on the calendar <image>",
                 "The {what} is on the calendar now <image>",
                 "Calendar photo, my {what} is marked <image>"),
    "arranged": ("Laid out the {thing} on the table like this <image>",
                 "This is the {thing} set out on the table <image>",
                 "Put the {thing} out on the table, have a look <image>"),
    "parking_first": ("Saving where I parked the car <image>",
                      "Left the car here today <image>",
                      "Parked up, here's the spot <image>",
                      "Noting where the car is parked <image>"),
    "parking_move": ("Moved the car to another bay today <image>",
                     "The car is in a different spot now <image>",
                     "Found a new spot for the car <image>",
                     "Parked somewhere else this time <image>",
                     "The car has moved, here's where it is <image>",
                     "Different parking spot today <image>"),
}
# The MemEye export's update chains (0036): the first image's line, then each update's from
# several. With one update line, its words ("again") were in most of a chain's sessions and
# in few others: a tell for evidence. The haystack draws its lines through the same table.
CHAINS: dict[str, tuple[str, tuple[str, ...]]] = {
    "parking_of": ("parking_first_of",
                   ("parking_move_of", "parking_move_of_bay", "parking_move_of_spot")),
    "locker": ("locker_first", ("locker_change", "locker_change_new", "locker_change_today")),
    "desk": ("desk_first", ("desk_swap", "desk_swap_new", "desk_swap_replaced")),
}
class Phrase(str):
    """Text with the phrases an optional LLM naturaliser must keep verbatim, and the
    other wordings of the same line (same slot values) an episode may say instead."""

    keep: tuple[str, ...] = ()
    wordings: tuple[str, ...] = ()


def as_phrase(text: str) -> Phrase:
    """``text`` as a :class:`Phrase`: itself when it is one, else a phrase that keeps
    nothing and has no other wordings (a plain line, a caller's own text)."""
    return text if isinstance(text, Phrase) else Phrase(text)


def sentence_start(text: str) -> str:
    """``text`` to open a sentence: its first letter upper case, the rest as it is
    (``str.capitalize`` lower-cases the rest: "My colleague tom")."""
    return text[:1].upper() + text[1:]


def line(template_name: str, /, variant: int = 0, **slots: str) -> Phrase:
    """``LINES[template_name]`` (or its ``variant``-th wording, counting round
    ``LINE_VARIANTS``) filled in; the slot values it uses are phrases to keep."""
    wordings = (LINES[template_name], *LINE_VARIANTS.get(template_name, ()))
    template = wordings[variant % len(wordings)]
    phrase = Phrase(template.format(**slots))
    phrase.keep = tuple(str(v) for k, v in slots.items() if "{" + k + "}" in template)
    if len(wordings) > 1:  # (a wording that drops a slot would lose a kept phrase)
        phrase.wordings = tuple(w.format(**slots) for w in wordings
                                if all(v in w.format(**slots) for v in phrase.keep))
    return phrase


def chain_line(rng: random.Random, chain: str, step: int, /, **slots: str) -> Phrase:
    """The line of a ``chain`` (a key of ``CHAINS``) sharing its ``step``-th image
    (0: the first)."""
    first, updates = CHAINS[chain]
    return line(first if step == 0 else rng.choice(updates), variant=0, **slots)


# What the assistant says to an article the user passes on (ie_entity's second session).
ARTICLE_REPLIES = ["Interesting, thanks for sharing that.", "Good to know, thanks.",
                   "Thanks, that's an interesting read.", "Huh, I didn't know that. Thanks!",
                   "Thanks for passing that on."]
# A timeline says them all (its evidence and its haystack draw from both lists alike): one
# conversation holds dozens of articles, and five replies said at most twice each left
# room for ten, so the haystack's were skipped and "is based in" read as evidence (AUC
# 0.634, 40 plans at 128k; design 0041). Not in the per-question layout, whose output they
# would change.
MORE_ARTICLE_REPLIES = [
    "Thanks, I hadn't heard that.", "Oh, that's good to know.", "Noted, thanks for the link.",
    "Interesting read, thanks.", "Thanks, I'll remember that.", "Huh, that's a surprise.",
    "Good find, thanks.", "Thanks, that explains a lot.", "Oh, I never knew that.",
    "Thanks for the heads-up.", "That's a useful bit of background, thanks.",
    "Interesting. Thanks for sending it.", "Thanks, that's new to me.",
    "Good to have that, thanks.", "Oh interesting, thanks.", "Thanks for pointing that out.",
    "Huh. Thanks for sharing.", "Nice, I didn't know the background.",
    "Thanks, that's worth knowing.", "Interesting, I'll keep it in mind.",
    "Ah, that's interesting. Thanks!", "Thanks, good to know where it comes from.",
    "Oh neat, thanks for passing it along.", "That's interesting, thank you.",
    "Thanks! I learned something today.",
]
TIMELINE_ARTICLE_REPLIES = (*ARTICLE_REPLIES, *MORE_ARTICLE_REPLIES)
SHARE_REPLIES = [
    "Thanks for sharing, I've got it.", "Nice, thanks for the photo.", "Got it, thanks.",
    "Thanks, that's clear.", "Noted, thanks for sending it over.", "Thanks, I can see it.",
    "Got it. Anything you want me to keep in mind about it?", "Thanks, saved.",
    "Nice one, thanks.", "Received, thank you.", "Thanks for sending that.",
    "Okay, I've got the picture.", "Great, thanks for showing me.", "Thanks, noted.",
    "Got it, I'll remember that.", "Lovely, thanks.", "Thanks, I'll keep that in mind.",
    "Okay, got it.", "Thanks for the picture.", "Great, I have it.", "Perfect, thanks.",
    "Thanks, that's useful to have.", "Got it, thank you.", "All right, noted.",
]
# More replies, each an acknowledgement and a remark on having the picture, so that a long
# episode (a 32k one shares ~140 images) need not say any reply more than twice.
SHARE_ACKS = ["Thanks!", "Got it.", "Nice.", "Oh, lovely.", "Great.", "Perfect.", "Okay.",
              "Cheers.", "Ah, thanks.", "Thank you.", "Noted.", "Right."]
SHARE_REMARKS = ["I can see it.", "That's clear.", "I've saved it.", "I'll keep it in mind.",
                 "Good to have it here.", "That's useful to have.", "Thanks for showing me.",
                 "Anything you want me to keep in mind about it?", "I'll remember that.",
                 "That helps.", "It came through fine.",
                 "Is there anything you want me to do with it?"]
SHARE_REPLIES += [f"{a} {r}" for a in SHARE_ACKS for r in SHARE_REMARKS
                  if not (a.startswith(("Thank", "Ah, thanks")) and r.startswith("Thanks"))]
# Replies that fit one kind of image (drawn with the general ones); none restates what the
# image shows.
SHARE_REPLIES_BY_KIND: dict[str, list[str]] = {
    "receipt": ["Thanks, I've got the receipt.", "Receipt noted, thanks.",
                "Good idea to keep those receipts.", "Thanks, filed with the others."],
    "ticket": ["Nice, that should be a good one.", "Great, enjoy it when the day comes!",
               "Thanks, I've noted the ticket.", "Lovely, something to look forward to."],
    "label": ["Thanks, I can read the label.", "Good to know what you're using.",
              "Nice, thanks for showing me the packet."],
    "calendar": ["Thanks, I've noted the date.", "Good idea to mark it.",
                 "Got it, it's in the calendar then."],
    "schedule": ["Busy day! Thanks for sharing the plan.", "Thanks, that's a full schedule.",
                 "Got the plan, thanks."],
    "clock": ["Thanks, noted the time.", "Got it, thanks for the time check."],
    "chat": ["Thanks, I see the message.", "Got it, thanks for the screenshot."],
    "app_ui": ["Thanks, I've got the screenshot.", "Screenshot noted, thanks.",
               "Got it, the app screen is clear.", "Thanks, I'll keep that screen in mind."],
    "scene": ["Thanks, I can see the table.", "Nice arrangement, thanks for the photo.",
              "Looks tidy, thanks."],
    "entity": ["Oh, nice one!", "Thanks for the photo, lovely.", "Ha, great picture.",
               "Thanks, I can see it clearly."],
}


def _slot_values(rng: random.Random) -> dict[str, str]:
    return {k: rng.choice(v) for k, v in SLOTS.items()}


@dataclass
class TurnPlan:
    role: str
    text: str
    images: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (kind, facts)
    facts: list[dict[str, Any]] = field(default_factory=list)  # text facts, for oracles
    keep: tuple[str, ...] = ()  # phrases a naturaliser must not touch
    # "topic" or "follow_up" (a small-talk exchange) or "share_reply:<kind>": lines
    # limit_repeats may redraw
    source: str = ""
    # other wordings of this line with the same slot values (a share line's): what
    # limit_repeats may say instead when this wording is already in the episode twice
    wordings: tuple[str, ...] = ()


@dataclass
class SessionPlan:
    topic: str
    turns: list[TurnPlan]
    role: str = "haystack"  # evidence | haystack | filler
    meta: dict[str, Any] = field(default_factory=dict)
    # the session's slot values (one city, one dish, ... per conversation); not exported
    slots: dict[str, str] = field(default_factory=dict)


def _sentence(text: str) -> str:
    """``text`` with its first letter capitalised (a slot may open it: "lasagne is ...")."""
    return text[:1].upper() + text[1:]


def _exchange(rng: random.Random, topic: str, pair: int | None, follow: int | None, *,
              values: dict[str, str], lead: bool | None = None, tail: bool | None = None,
              ) -> list[TurnPlan]:
    """One user line and the reply that answers it: the topic's ``pair``-th (its slots
    filled from ``values`` on both sides) or else the ``follow``-th follow-up, with a
    lead-in and a tail as ``lead`` and ``tail`` say (each ``VARY_RATE`` of the time if
    None)."""
    if pair is not None:
        bank = TOPICS[topic]
        user, reply = (_sentence(bank[side][pair].format(**values)) for side in ("user",
                                                                                 "assistant"))
        source = "topic"
    else:
        user, reply = FOLLOW_UPS[follow or 0]
        source = "follow_up"
    if rng.random() < VARY_RATE if lead is None else lead:
        user = f"{rng.choice(LEAD_INS)} {user}"
    if rng.random() < VARY_RATE if tail is None else tail:
        reply = f"{reply} {rng.choice(TAILS)}"
    return [TurnPlan("user", user, source=source), TurnPlan("assistant", reply, source=source)]


def _redraw(rng: random.Random, session: SessionPlan, pair: list[TurnPlan]) -> list[TurnPlan]:
    """Another exchange of the same shape as ``pair``: a topic's or a follow-up as it was,
    with a lead-in and a tail where it had them. (Redrawn freely, the exchanges of sessions
    that share lines with many others, evidence with several sessions, drifted towards
    follow-ups and lead-ins, which a classifier then read as evidence.)"""
    user, reply = pair[0].text, pair[1].text
    lead = any(user.startswith(f"{x} ") for x in LEAD_INS)
    tail = any(reply.endswith(f" {x}") for x in TAILS)
    # A topic's exchange may take other slot values: the session's own may be what repeats.
    topic = session.topic
    if pair[0].source == "topic":
        return _exchange(rng, topic, rng.randrange(len(TOPICS[topic]["user"])), None,
                         values=_slot_values(rng), lead=lead, tail=tail)
    return _exchange(rng, topic, None, rng.randrange(len(FOLLOW_UPS)), values={},
                     lead=lead, tail=tail)


def chat_session(rng: random.Random, *, topic: str | None = None, n_exchanges: int | None = None,
                 inserts: list[list[TurnPlan]] | None = None) -> SessionPlan:
    """A topical user/assistant session; ``inserts`` are turn groups (e.g. a shared image and
    its reply) placed at random exchange boundaries, in the given order. It opens with one
    of the topic's exchanges; later ones are the topic's or follow-ups, none twice."""
    topic = topic or rng.choice(sorted(TOPICS))
    n = n_exchanges if n_exchanges is not None else rng.randint(3, 6)
    size = len(TOPICS[topic]["user"])
    pairs = rng.sample(range(size), size)
    follows = rng.sample(range(len(FOLLOW_UPS)), len(FOLLOW_UPS))
    values = _slot_values(rng)  # one trip, one dish, one pet per conversation
    turns: list[TurnPlan] = []
    for i in range(n):
        if pairs and (i == 0 or rng.random() < TOPIC_RATE):
            turns += _exchange(rng, topic, pairs.pop(), None, values=values)
        else:
            turns += _exchange(rng, topic, None, follows.pop(), values=values)
    if inserts:
        # Insert after whole exchanges (keeps user/assistant alternation), in the given
        # order: the slots are sorted and filled from the last so indices stay valid.
        slots = sorted(rng.choice(range(2, len(turns) + 1, 2)) for _ in inserts)
        for pos, group in sorted(zip(slots, range(len(inserts)), strict=True), reverse=True):
            turns[pos:pos] = inserts[group]
    return SessionPlan(topic=topic, turns=turns, slots=values)


MAX_REPEATS = 2  # how often one line may occur in an episode
_REDRAWS = 40
_PLACEHOLDER = re.compile(r"\s*<image>")


def line_key(text: str) -> str:
    """A turn's text as repeats are counted: case, spacing and image placeholders aside
    (the validate gate counts the same way)."""
    return " ".join(_PLACEHOLDER.sub(" ", text).split()).casefold()


def lines_fit(session_texts: list[str], counts: Counter[str], limit: int = MAX_REPEATS) -> bool:
    """Whether adding these lines to an episode's ``counts`` (keyed by :func:`line_key`)
    keeps each within ``limit``."""
    return all(counts[t] + n <= limit for t, n in Counter(map(line_key, session_texts)).items())


def _reword(rng: random.Random, turn: TurnPlan, counts: Counter[str], limit: int) -> None:
    """Say ``turn`` in another of its wordings that the episode holds fewer than ``limit``
    times (as it was if there is none); an image-less turn keeps no placeholder."""
    free = [w for w in turn.wordings if counts[line_key(w)] < limit]
    if counts[line_key(turn.text)] < limit or not free:
        return
    text = rng.choice(free)
    turn.text = text if turn.images else _PLACEHOLDER.sub("", text).strip()


def limit_repeats(sessions: list[SessionPlan], rng: random.Random,
                  counts: Counter[str] | None = None, limit: int = MAX_REPEATS) -> Counter[str]:
    """Redraw the small-talk exchanges and image replies of ``sessions`` (in place) that
    would make a line occur more than ``limit`` times, counting on from ``counts`` (the
    lines already in the episode); returns the updated counts. Lines that carry a
    question's facts are never redrawn (they come in variants instead; see ``LINES``)."""
    counts = Counter() if counts is None else counts
    for session in sessions:
        turns = session.turns
        i = 0
        while i < len(turns):
            if turns[i].source in ("topic", "follow_up") and i + 1 < len(turns):
                pair = turns[i:i + 2]
                for _ in range(_REDRAWS):
                    if lines_fit([t.text for t in pair], counts, limit):
                        break
                    pair = _redraw(rng, session, pair)
                turns[i:i + 2] = pair
                counts.update(line_key(t.text) for t in pair)
                i += 2
                continue
            if turns[i].source.startswith("share_reply"):
                replies = _share_replies(turns[i].source.partition(":")[2])
                for _ in range(_REDRAWS):
                    if counts[line_key(turns[i].text)] < limit:
                        break
                    turns[i].text = rng.choice(replies)
            elif turns[i].wordings:
                _reword(rng, turns[i], counts, limit)
            counts[line_key(turns[i].text)] += 1
            i += 1
    return counts


def _share_replies(kind: str) -> list[str]:
    return SHARE_REPLIES + SHARE_REPLIES_BY_KIND.get(kind, [])


def share_image(rng: random.Random, kind: str, facts: dict[str, Any], *, line: str | None = None,
                place: str = "the shop", text_facts: list[dict[str, Any]] | None = None,
                reply: str | None = None, variant: int | None = None) -> list[TurnPlan]:
    """A user turn sharing an image (with an indirect line: ``line``, else the ``variant``-th
    of its kind's share lines, else a random one) and the assistant's reply."""
    if line is not None:
        phrase = as_phrase(line)
        text, keep, wordings = phrase, phrase.keep, phrase.wordings
    else:
        lines = SHARE_LINES[kind]
        template = rng.choice(lines) if variant is None else lines[variant % len(lines)]
        text = template.format(place=place)
        keep = (place,) if place in text else ()
        # (the kind's other share lines that keep what this one names)
        wordings = tuple(w for w in (t.format(place=place) for t in lines)
                         if all(k in w for k in keep))
    text, wordings = _with_placeholder(text), tuple(map(_with_placeholder, wordings))
    return [TurnPlan("user", str(text), images=[(kind, facts)], facts=list(text_facts or []),
                     keep=keep, wordings=wordings if len(wordings) > 1 else ()),
            TurnPlan("assistant", reply or rng.choice(_share_replies(kind)),
                     source="" if reply else f"share_reply:{kind}")]


def _with_placeholder(text: str) -> str:
    return text if "<image>" in text else f"{text} <image>"


def say(role: str, text: str, facts: list[dict[str, Any]] | None = None,
        keep: tuple[str, ...] = ()) -> TurnPlan:
    return TurnPlan(role, str(text), facts=list(facts or []),
                    keep=tuple(keep) + as_phrase(text).keep)

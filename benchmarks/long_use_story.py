"""A year in one user's life, told to the app in 150+ turns (benchmarks/long_use.py), written fresh.

Each turn is what the user says; `adds` names the facts it states (keys from FACTS), `ends` the
facts it makes untrue (moved, changed job, forgot). Between them: small talk, questions, requests
for work and other people's news, which must leave no fact about the user behind. A fact's key is
matched against the live facts by names and numbers (benchmarks/phrasing.py's `matches`), never by
wording: "|" separates alternatives, "+" joins terms that must all be there, a trailing "*"
matches a word's start, a leading "!" must not be there. A key names one fact, not a person: with
"noor" alone, "Noor starts at a new school" counted as a second copy of "our daughter is Noor",
and "Noor is 5" (untrue since she turned 6) as that fact's copy instead of as stale.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Turn:
    month: int  # the simulated month it is said in (1-12); the store's clock is not faked
    text: str
    adds: tuple[str, ...] = ()
    ends: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fact:
    key: str
    about: str = "user"  # or the other person's name: such a fact must stay theirs
    still: str = ""  # once untrue, what a live fact claiming it still holds matches (default: key)


FACTS: dict[str, Fact] = {
    "name": Fact("Ilse"),
    "home_gent": Fact("ghent"),
    "home_leuven": Fact("live*+leuven|leuven+flat|leuven+home"),
    "job_nurse": Fact("nurse"),
    "job_teacher": Fact("teacher*+!noor+!pieter"),
    "partner": Fact("tomas+partner|partner+tomas|tomas+live*|live*+tomas"),
    "daughter": Fact("noor+daughter|daughter+noor"),
    "daughter_age_5": Fact("noor+5"),
    "daughter_age_6": Fact("noor+6"),
    "cat": Fact("pixel+cat|cat+pixel"),
    "dog": Fact("bram+dog|dog+bram"),
    "tea": Fact("tea"),
    "coffee": Fact("coffee"),
    "cello": Fact("cello"),
    "piano": Fact("piano"),
    "vegetarian": Fact("vegetarian|meat"),
    "allergy": Fact("peanut*"),
    "birthday": Fact("march+14|14+march"),
    "car": Fact("volvo", still="volvo+!sold"),
    "bike": Fact("cycl*"),
    "running": Fact("run*"),
    "brother": Fact("jonas+brother|brother+jonas|jonas+antwerp"),
    "language": Fact("spanish"),
    "book_club": Fact("book club|book+club", still="book+club+!left+!longer+!quit+!stopped"),
    "diabetes_mum": Fact("greta+diabet*", about="greta"),
    "garden": Fact("tomato*"),
    "flat_garden": Fact("garden+flat|flat+garden"),
    "climbing": Fact("climb*|boulder*"),
    "newsletter": Fact("newsletter"),
}


def _f(month: int, text: str, adds: tuple[str, ...] = (), ends: tuple[str, ...] = ()) -> Turn:
    return Turn(month, text, adds, ends)


STORY: tuple[Turn, ...] = (
    _f(1, "Hi! I'm Ilse, nice to meet you.", ("name",)),
    _f(1, "I live in Ghent with my partner Tomas.", ("home_gent", "partner")),
    _f(1, "What's a good way to start the morning?"),
    _f(1, "I work as a nurse at the university hospital.", ("job_nurse",)),
    _f(1, "Can you give me three ideas for a quick weeknight dinner?"),
    _f(1, "Our daughter Noor is 5.", ("daughter", "daughter_age_5")),
    _f(1, "The weather here has been grey all week."),
    _f(1, "I'm vegetarian, so no meat in recipes please.", ("vegetarian",)),
    _f(1, "My colleague Anke just got engaged!"),
    _f(1, "Write a short poem about snow."),
    _f(1, "We have a cat called Pixel.", ("cat",)),
    _f(1, "What time is it in Tokyo when it's noon in Brussels?"),
    _f(1, "I drink green tea every morning.", ("tea",)),
    _f(1, "If I ever won the lottery I'd buy a boat, haha."),
    _f(1, "I play the cello in an amateur orchestra.", ("cello",)),
    _f(2, "Tomas's sister moved to Lyon last week."),
    _f(2, "How do I get red wine out of a carpet?"),
    _f(2, "I'm allergic to peanuts, so keep that in mind for recipes.", ("allergy",)),
    _f(2, "Translate 'good luck' into German."),
    _f(2, "My birthday is on March 14.", ("birthday",)),
    _f(2, "Ugh, Mondays."),
    _f(2, "I drive an old Volvo.", ("car",)),
    _f(2, "Can you summarise the plot of Hamlet in two sentences?"),
    _f(2, "My brother Jonas lives in Antwerp.", ("brother",)),
    _f(2, "Maybe next year we'll visit Japan, who knows."),
    _f(2, "My mother Greta was diagnosed with diabetes.", ("diabetes_mum",)),
    _f(2, "Any tips for sleeping better on night shifts?"),
    _f(2, "I'm learning Spanish on the side.", ("language",)),
    _f(2, "What's the capital of Australia?"),
    _f(2, "Thanks, that's helpful!"),
    _f(3, "It's my birthday week, we're going out for dinner."),
    _f(3, "My neighbour's dog keeps barking at night."),
    _f(3, "Draft a polite email asking my landlord to fix the heating."),
    _f(3, "I joined a book club at the library.", ("book_club",)),
    _f(3, "How many calories are in a banana?"),
    _f(3, "I started running on Sunday mornings.", ("running",)),
    _f(3, "Anke's wedding is in September."),
    _f(3, "Should I learn Python or JavaScript first? Just curious."),
    _f(3, "Nice, thank you."),
    _f(3, "We're growing tomatoes on the balcony this year.", ("garden",)),
    _f(3, "Explain how a heat pump works, simply."),
    _f(3, "I might try climbing at some point."),
    _f(3, "Tomas got a new job at a bakery."),
    _f(3, "What's a good stretch after running?"),
    _f(3, "lol ok"),
    _f(4, "Big news: we're moving to Leuven next month!"),
    _f(4, "Make me a packing checklist for a move."),
    _f(4, "Can you recommend a novel for the book club?"),
    _f(4, "We moved, we live in Leuven now.", ("home_leuven",), ("home_gent",)),
    _f(4, "The new flat has a tiny garden.", ("flat_garden",)),
    _f(4, "How do I register my new address in Belgium?"),
    _f(4, "Jonas came over to help us move. Super kind."),
    _f(4, "Where can I recycle old cardboard boxes?"),
    _f(4, "Pixel hid under the bed for two days after the move."),
    _f(4, "What's the difference between a latte and a cappuccino?"),
    _f(4, "Write a haiku about boxes."),
    _f(4, "I'm so tired today."),
    _f(4, "Noor starts at a new school in Leuven."),
    _f(4, "Give me a word that rhymes with orange."),
    _f(4, "Thanks!"),
    _f(5, "I quit the hospital. I'm a primary school teacher now!", ("job_teacher",), ("job_nurse",)),
    _f(5, "Lesson ideas for teaching fractions to eight-year-olds?"),
    _f(5, "My new colleague Pieter has three kids."),
    _f(5, "How long should a parent-teacher meeting take?"),
    _f(5, "We adopted a dog named Bram!", ("dog",)),
    _f(5, "How often should a puppy be walked?"),
    _f(5, "Bram chewed my left shoe. Classic."),
    _f(5, "If we had a bigger house we'd get chickens."),
    _f(5, "What's a kind way to tell a student their work needs redoing?"),
    _f(5, "Could you make a shopping list for a vegetarian barbecue?"),
    _f(5, "The weather is finally warm."),
    _f(5, "Tomas ran a half marathon in Brussels."),
    _f(5, "I switched from tea to coffee, I need the caffeine now.", ("coffee",), ("tea",)),
    _f(5, "Explain compound interest like I'm ten."),
    _f(5, "Haha, fair enough."),
    _f(6, "Please forget that I play the cello, I stopped and don't want it remembered.", (), ("cello",)),
    _f(6, "Which board games work for a six-year-old?"),
    _f(6, "Noor turned 6 last week!", ("daughter_age_6",), ("daughter_age_5",)),
    _f(6, "Plan a small birthday party for six kids."),
    _f(6, "Greta is doing better with her diet."),
    _f(6, "How do I keep tomato plants from wilting?"),
    _f(6, "I took up the piano instead.", ("piano",)),
    _f(6, "What are easy piano pieces for beginners?"),
    _f(6, "It's too hot to think."),
    _f(6, "Write a thank-you note for Noor's teacher."),
    _f(6, "Anke sent us her wedding invitation."),
    _f(6, "Is it safe for dogs to eat watermelon?"),
    _f(6, "Meh, what a day."),
    _f(6, "Summarise the main causes of the French Revolution."),
    _f(6, "Thanks, bye!"),
    _f(7, "We're on holiday in the Ardennes this week."),
    _f(7, "Suggest a rainy-day activity for a family."),
    _f(7, "Tomas burned the pancakes again."),
    _f(7, "What's the best way to pack a cooler?"),
    _f(7, "My bike got a flat tyre on the trail."),
    _f(7, "How do you fix a bike puncture?"),
    _f(7, "I'd love to see the northern lights one day."),
    _f(7, "Jonas and his wife are expecting a baby."),
    _f(7, "Give me a fun fact about owls."),
    _f(7, "ok cool"),
    _f(8, "I sold the Volvo, we cycle everywhere now.", ("bike",), ("car",)),
    _f(8, "What should I look for in a cargo bike?"),
    _f(8, "Greta is visiting us for two weeks."),
    _f(8, "Recommend a podcast about history."),
    _f(8, "Pixel caught a mouse, gross."),
    _f(8, "Write a limerick about a cat."),
    _f(8, "How do I make a sourdough starter?"),
    _f(8, "School starts again soon, I'm nervous."),
    _f(8, "Would a standing desk help my back? Just wondering."),
    _f(8, "Sure."),
    _f(9, "Anke's wedding was beautiful."),
    _f(9, "Draft a first-day-of-school letter to parents."),
    _f(9, "I left the book club, no time anymore.", (), ("book_club",)),
    _f(9, "What's the etiquette for a wedding gift amount?"),
    _f(9, "Jonas's baby girl was born! Her name is Lies."),
    _f(9, "How do I say congratulations in Dutch?"),
    _f(9, "Bram learned to sit on command."),
    _f(9, "Could you explain photosynthesis for a class of eight-year-olds?"),
    _f(9, "Our tomatoes were delicious this year."),
    _f(9, "Hmm."),
    _f(10, "Tomas wants to learn Italian."),
    _f(10, "What are some autumn soups without meat?"),
    _f(10, "Actually, scratch what I said about learning Spanish, I gave that up.", (), ("language",)),
    _f(10, "Give me a 20-minute home workout."),
    _f(10, "I still run every Sunday, rain or shine."),
    _f(10, "Recommend a documentary about the ocean."),
    _f(10, "My friend Sara is moving to Canada."),
    _f(10, "How do I carve a pumpkin safely with kids?"),
    _f(10, "Brr, it's cold."),
    _f(10, "What's a good gift for a colleague leaving?"),
    _f(11, "I started a newsletter for the parents of my class.", ("newsletter",)),
    _f(11, "Write a short intro paragraph for that newsletter."),
    _f(11, "Greta's blood sugar is stable now."),
    _f(11, "How do I make a good mushroom risotto?"),
    _f(11, "I've been trying bouldering, it's fun.", ("climbing",)),
    _f(11, "What shoes do I need for bouldering?"),
    _f(11, "Pieter is leaving our school in December."),
    _f(11, "If it snows we'll go sledding."),
    _f(11, "Tell me a joke about teachers."),
    _f(11, "Yeah."),
    _f(12, "Please don't keep the newsletter thing, forget it.", (), ("newsletter",)),
    _f(12, "Plan a cosy Christmas dinner for six, vegetarian."),
    _f(12, "Noor wants a bike for Christmas."),
    _f(12, "What's a good book for a six-year-old who loves animals?"),
    _f(12, "Jonas and family are coming for Christmas."),
    _f(12, "How do I keep a real Christmas tree fresh?"),
    _f(12, "Wrap-up of my year: busy but good."),
    _f(12, "Suggest three New Year's resolutions for a teacher."),
    _f(12, "Happy holidays!"),
    _f(12, "Bye for now."),
)

# The people (and pets) of the story: a live fact naming one that matches no fact above is about
# someone else's news (counted apart from junk: it is not about the user, but it is not noise).
PEOPLE: tuple[str, ...] = ("tomas", "noor", "greta", "jonas", "pixel", "bram", "anke", "pieter", "sara",
                           "lies")


@dataclass
class AnswerKey:
    """What must be live at the end, and what must be gone (computed from the story)."""

    live: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    # what the turn that made a fact untrue said instead ("noor turned 6" for "noor is 5"): a
    # live fact holding the new one ("moved from Ghent to Leuven") is history, not stale
    instead: dict[str, list[str]] = field(default_factory=dict)


def answer_key(upto: int | None = None) -> AnswerKey:
    """The facts true after the first `upto` turns (all: the end), and the ones made untrue."""
    true: dict[str, None] = {}
    ended: dict[str, list[str]] = {}
    for turn in STORY[:upto]:
        for fid in turn.ends:
            true.pop(fid, None)
            ended[fid] = list(turn.adds)
        for fid in turn.adds:
            true[fid] = None
            ended.pop(fid, None)
    return AnswerKey(live=list(true), gone=list(ended), instead=ended)

"""Does a unit carry content? One offline judgement, used by every metabolism pass.

Greetings, thanks, sign-offs, generic reactions and encouragement ("Keep it up, you've got
this!"), empty journal pages (front matter or a title only), heading-only sections, blocks that
are only an image, an embed or a link, bare TODO lines, and table header or separator rows stay
stored, recallable and importable exactly as they are, but no pass links, tags, merges,
contradicts, crystallises or digests them: on conversations-dev a fifth of the links the
metabolism confirmed had such an end, all 16 of its merges and its one contradiction.

What counts is the unit's *specific* words: content words that are not the register of small
talk (`CHATTER`), not a speaker's name ("Jolene: Where is it?" says nothing about Jolene), not a
photo caption's boilerplate ("a photography of"), and not markup. A unit carries content when
it has at least MIN_SPECIFIC of them.
"""
from __future__ import annotations

import re
from typing import Iterable

from .text import TextMemo, addresses, content_words, speaker  # noqa: F401  (speaker: callers read it from here too)

MIN_SPECIFIC = 2
MIN_SHARE = 0.3

# The register of small talk: greetings, thanks, sign-offs, agreement, reactions, encouragement
# and life advice. General English, written as a list of that register (not fitted word by word
# to any data set); a word that can name a topic ("art", "dance", "mental") is not here.
CHATTER = frozenset("""
hi hey hello hiya yo howdy morning evening afternoon night hows how've been doing
thanks thank thx ty appreciate appreciated appreciating grateful gratitude thankful blessed
bye goodbye cya see ya later soon talk care take catch chat chatting welcome anytime
wow awesome great cool nice amazing wonderful fantastic incredible lovely sweet neat yay omg lol haha hahaha ahh aww
glad happy happiness proud pride sorry congrats congratulations exciting excited interesting inspiring inspired
impressive impressed inspire inspires inspiration cheers
keep keeping kept stay staying stayed going goes gone get gets getting got give gives giving gave given
make makes made making know knows knowing knew think thinks thinking thought feel feels feeling felt
want wants wanted wanting need needs needed sounds sound sounded looks look looked looking seem seems seemed
push pushing pushed believe believing dreams dream dreaming quit rock support supporting supportive supported
luck hope hoping hopeful crossed cheer cheering cheered rooting positivity positive vibes vibe kindness difference
motivate motivating motivated motivation motivational encouraging encourage encouragement encouraged strength strong
stronger yes yeah yep yup sure totally definitely absolutely certainly surely agreed agree right true exactly indeed
okay alright really pretty lot lots little much things thing stuff way ways truly honestly seriously
friend friends friendship means mean meant words always never ever often sometimes usually forever
worries worry problem problems enjoy enjoyed enjoying enjoyable fun blast love loved loves like liked hear heard
good best better super real day days week time times today tonight tomorrow yesterday
spirit attitude journey path step steps effort efforts work working hard passion passionate dedication dedicated
commitment committed determination determined persistence resilience share sharing shared spread spreading
tell telling told update updated updates posted post help helped helping helps helpful
here there everything anything something nothing someone anyone everyone others other people everybody somebody
life lives world wish wishing wishes safe goals goal success successful succeed achieve achieved achieving
achievement achievements progress powerful joy joyful beauty beautiful moments moment refreshing priceless lucky
important experience experiences change changes changed impact impacts care caring cares cared comfort comforting
together team teamwork kind tough
balance key crucial vital essential matters matter grow growth growing learn learning learned lesson lessons
challenge challenges challenging tackle tackling capable potential boundaries limits zone comfortable perspective
perspectives focus focused sharp mind minds ourselves yourself themselves myself self act acts actions small big
understanding reminder remind reminds reminded awesome special truly deserve deserves worth worthwhile fulfilling
fulfillment rewarding satisfying satisfaction brighter bright future hopefully glad
since last seen while ages missed busy crazy
""".split())

# what is left of a contraction once it is split into words ("haven't" -> "haven", "t"), and the
# spoken forms of "going to", "got to"
CONTRACTED = frozenset("haven hasn hadn didn doesn don isn aren wasn weren couldn wouldn shouldn ain ve ll re "
                       "gonna gotta wanna ya".split())

# the set phrases of small talk: each word of them can name a topic elsewhere ("back", "reach",
# "easy", "hand"), none does in the phrase ("got your back", "reach out", "take it easy", "lend a
# hand"). General English, written as a list of that register, not read off a data set.
_IDIOM = re.compile(r"\b(?:(?:got|have|having|had) (?:my|your|our|his|her|their|each other'?s) backs?|"
                    r"reach(?:ing|ed)? out|feel free|take it easy|no worries|no prob(?:lem)?s?|of course|"
                    r"owe (?:you|me|him|her|them) one|lend(?:ing)? (?:a|an) (?:hand|ear)|come true|comes true|"
                    r"hold(?:s|ing)? (?:me|you|us|them|him|her) back|let(?:ting)? (?:you|me|us|them|him|her) down|"
                    r"on the same page|make (?:a|some) splash|keep (?:it|them) up|go for it|"
                    r"(?:stay|keep|kept) in touch|catch(?:ing)? up|caught up|anything (?:new|else)|what else|"
                    r"something else|spill the beans|on track|hang in there|break a leg|fingers crossed|"
                    r"you(?:'ve)? got this|all the best|my pleasure|no big deal|means? (?:a lot|the world|a ton)|"
                    r"touch base|hit me up|heads up|have a blast|(?:any|some|next) time|long time no see|"
                    r"what(?:'s| is) up|how(?:'s| is) it going|here for you|there for you|cheering (?:you|me) on|"
                    r"(?:in|from) the sidelines|bumps in the road|up and down|ups and downs|step by step|"
                    r"one day at a time|at the end of the day|if you need anything|let me know)\b", re.IGNORECASE)
# a negative contraction whose stem is another word: "won't" is no "won", "can't" no "can"
_CONTRACTION = re.compile(r"\b(won|can|shan)['’]t\b", re.IGNORECASE)

_SUFFIXES = ("ing", "ed", "es", "s", "ly")       # (not -er: "timer" is no "time")


def _inflected(words: frozenset[str]) -> frozenset[str]:
    """The words and their inflections: a suffix on the word ("talked"), on the word without its
    final e ("chatting" is no: "reminding", "hoping"), or on its last consonant doubled ("chatted"),
    the stem kept at three letters or more."""
    forms = set(words)
    for word in words:
        for suffix in _SUFFIXES:
            if len(word) >= 3:
                forms.add(word + suffix)
                if len(word) + 1 > 3:
                    forms.add(word + word[-1] + suffix)
            if word.endswith("e") and len(word) - 1 >= 3:
                forms.add(word[:-1] + suffix)
    return frozenset(forms)


_CHATTER_FORMS = _inflected(CHATTER)


def is_chatter(word: str) -> bool:
    """A word of small talk, also inflected ("chatted", "talked", "reminding", "keeps")."""
    return word in _CHATTER_FORMS

# what a shared photo's caption adds that says nothing ("[shares a photo: a photography of ...]")
_CAPTION_BOILERPLATE = re.compile(r"\[(?:shares?|sent|sends) (?:a |an )?(?:photo|picture|image|video)s?(?: of)?:?|"
                                  r"\b(?:a|an) (?:photography|photo|picture|image|close up|closeup) of\b|\]",
                                  re.IGNORECASE)
# A shared photo's caption is a captioning model's description, not anyone's words: its people,
# poses, places in the frame and colours ("a man and a woman standing next to a white table")
# describe every photo; only what is in it ("a turtle", "a trophy") can say what a turn is about.
_CAPTION = re.compile(r"\[(?:shares?|sent|sends) (?:a |an )?(?:photo|picture|image|video)s?(?: of)?:?([^\]\n]{0,400})\]",
                      re.IGNORECASE)
CAPTION_GENERIC = frozenset("""
man men woman women person people group couple boy boys girl girls child children kid kids baby guy lady young old
sitting sits standing stands holding holds walking posing laying lying wearing smiling looking filled shaking hanging
leaning showing shows taken
top front next background foreground around middle side near behind bottom corner inside outside
white black blue red green yellow brown gray grey pink purple orange dark light colorful
photo photography picture image view close closeup bunch pair lot two three four several many various
""".split())


# words that show a photo: "Look at him!", "Here's my new bike", "This is it", "Check it out"
_SHOWS = re.compile(r"\b(?:look|looks|here'?s|here is|here it is|here you go|here they are|this is (?:my|our|me|it|the)"
                    r"|these are|that'?s me|check|pic|pics|photo|photos|picture|pictures|meet|snapped|took)\b",
                    re.IGNORECASE)
_SHORT_NAME = re.compile(r"\b[A-Z][a-z]{2,3}\b")


def _plain_captions(text: str) -> str:
    return _CAPTION.sub(lambda m: " " + " ".join(w for w in m.group(1).split()
                                                 if w.strip(".,;:!?").casefold() not in CAPTION_GENERIC) + " ", text)


_FRONT_MATTER = re.compile(r"\A\ufeff?---\r?\n.*?\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_PROPERTY = re.compile(r"^[ \t]*[-*]?[ \t]*[\w-]+::.*$", re.MULTILINE)                 # Logseq page/block properties
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t].*$", re.MULTILINE)
_EMBED = re.compile(r"!\[\[[^\]]*\]\]|!\[[^\]]*\]\([^)]*\)|\{\{[^}]*\}\}|\(\([0-9a-f-]{8,}\)\)", re.IGNORECASE)
_LINK_ONLY_LINE = re.compile(r"^[ \t]*[-*+]?[ \t]*(?:\[\[[^\]\n]*\]\]|\[[^\]\n]*\]\([^)\n]*\)|<?https?://\S+>?)[ \t]*$",
                             re.MULTILINE)
_URL = re.compile(r"https?://\S+")
# markup that is no one's words: org/Logseq block markers and drawers ("#+BEGIN_NOTE",
# ":PROPERTIES: :now: 1614348097567 :END:"), Logseq block attributes ("{:width 485}") and
# Obsidian callout markers ("> [!example]")
# (bounded repetitions: an opening with no close, repeated through a long note, made these
# quadratic; a drawer or a caption is a few hundred characters)
_MARKUP = re.compile(r"#\+[A-Za-z_]+:?|:(?:PROPERTIES|LOGBOOK):.{0,2000}?:END:|\{:[^{}\n]{0,400}\}|\[![A-Za-z-]+\][+-]?",
                     re.DOTALL)
_HASHTAG = re.compile(r"(?<![\w&#/])#(?=[A-Za-z])[\w/-]+")         # a tag is filed as a tag, not said
_TABLE_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$", re.MULTILINE)
_TODO = re.compile(r"^[ \t]*[-*+]?[ \t]*(?:\[[ xX]?\]|TODO|DONE|LATER|NOW|DOING)[ \t]*$", re.MULTILINE)
# (line patterns use [ \t], never \s, beside ^ in MULTILINE: \s matches newlines, and a section of
# a few hundred blank lines took minutes of backtracking)
_LIST_MARK = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+", re.MULTILINE)


def _unlabelled(text: str) -> str:
    """The text after its speaker label ("Caroline: ..."), as recall reads the label."""
    text = text.lstrip()
    who = speaker(text)
    return text[len(who) + 1:] if who else text


def _table_header_only(text: str) -> bool:
    """A table and nothing else, with no row below its header ("| Field | Type | Description |")."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines or not all(line.startswith("|") for line in lines):
        return False
    return len([line for line in lines if not _TABLE_RULE.fullmatch(line)]) <= 1


def body(text: str) -> str:
    """The words a unit says: without front matter, properties, headings, embeds, images,
    markup, hashtags, link-only lines, table rules, bare TODO markers, a speaker label and
    caption boilerplate."""
    text = text or ""
    text = _FRONT_MATTER.sub(" ", text)
    text = _PROPERTY.sub(" ", text)
    text = _HEADING.sub(" ", text)
    text = _EMBED.sub(" ", text)
    text = _MARKUP.sub(" ", text)
    text = _HASHTAG.sub(" ", text)
    text = _LINK_ONLY_LINE.sub(" ", text)
    text = _URL.sub(" ", text)
    text = _TABLE_RULE.sub(" ", text)
    text = _TODO.sub(" ", text)
    text = _LIST_MARK.sub("", text)
    return _CAPTION_BOILERPLATE.sub(" ", _plain_captions(_unlabelled(text)))


# nouns and adjectives of no topic: what a tag made of nothing but these (and small talk) would
# gather is everything ("difference", "world", "challenges", "opportunities")
VAGUE = frozenset("""
world difference impact challenges challenge opportunities opportunity successes stories story emotions emotion
values value solutions solution situation situations backgrounds background adventure adventures escape smiles
smile bunch spots spot offers offer magical rough hand hands white black signs sign things thing stuff kinds kind
ways way lots lot part parts side sides place places idea ideas reason reasons feelings feeling happiness
sadness positive negative amazing awesome cool nice great good bad
importance connection connections power quality interest interests recommendation recommendations suggestion
suggestions obstacle obstacles setback setbacks faith improvement improvements resources energy trust
worlds struggle struggles force forces action actions compassion enthusiasm
""".split())


def says_a_topic(name: str) -> bool:
    """Whether a tag name names something: not only small talk and vague words."""
    words = [w for w in content_words(name.replace("-", " ")) if not w.isdigit()]
    return bool(words) and not all(w in CHATTER or w in VAGUE for w in words)


def spoken(text: str) -> str:
    """The text without what is not anyone's words about a topic: the speaker label, a shared
    photo's caption boilerplate, embeds, images, markup and addresses (headings and properties stay:
    they name what a note is about)."""
    text = _EMBED.sub(" ", text or "")
    text = _MARKUP.sub(" ", text)
    text = _URL.sub(" ", text)
    return _CAPTION_BOILERPLATE.sub(" ", _plain_captions(_unlabelled(text)))


# A pass judges the same texts again and again (a memory, then each of its candidates and their
# neighbours): on a 10,000-memory store link-propose read each text's words about ten times, half
# its time. Kept per text (and the speakers' names it was read with) when the caller says the text
# is a memory's whole text (`kept=True`), dropped when that memory is forgotten in this process
# (`TextMemo`); a sentence or a part of a text is never kept (forget could not find it to drop).
_SPECIFIC = TextMemo(texts=20_000)
_CARRIES = TextMemo(texts=20_000)


def specific_words(text: str, names: Iterable[str] = (), kept: bool = False) -> list[str]:
    """The unit's content words that can say what it is about: not small talk, not the names of
    the people speaking (`names`, lower-case, and the unit's own speaker), not markup."""
    text = text or ""
    skip = frozenset(n.casefold() for n in names)
    if not kept:
        return _specific_words(text, set(skip))
    return list(_kept(_SPECIFIC, text, skip, lambda: tuple(_specific_words(text, set(skip)))))


def _kept(memo: TextMemo, text: str, names: frozenset[str], compute):
    """`compute()` for a memory's whole text read with these speakers' names, kept in `memo`."""
    per_names = memo.get(text, dict)
    if names not in per_names:
        per_names[names] = compute()
    return per_names[names]


def _specific_words(text: str, skip: set[str]) -> list[str]:
    who = speaker(text or "")
    if who:
        skip |= {part.casefold() for part in who.split()}
    # a short form of a speaker's name is their name too ("Wow, Mel, ..." for Melanie), when it is
    # three or four letters and used to address someone ("Robert" is not Roberta, "France" no Francesca)
    skip |= {w.casefold() for w in dict.fromkeys(_SHORT_NAME.findall(text or ""))
             if addresses(text, w) and any(len(w) < len(n) and n.startswith(w.casefold()) for n in skip)}
    if _table_header_only(text or ""):
        return []
    return [w for w in content_words(_said(text)) if not is_chatter(w) and w not in CONTRACTED and w not in skip
            and not (w.isdigit() and len(w) < 4) and len(w) > 2]


def _said(text: str) -> str:
    """`body` without small talk's set phrases and negative contractions."""
    return _IDIOM.sub(" ", _CONTRACTION.sub(" not ", body(text)))


def carries_content(text: str, names: Iterable[str] = (), kept: bool = False) -> bool:
    """At least MIN_SPECIFIC distinct specific words, and small talk not the bulk of what it says
    (specific words at least MIN_SHARE of its specific and small-talk words together: "Thanks!
    I won't give up on my goals as long as you're here to support me" names one thing, "goals",
    among six words of encouragement): something a person would keep a note of."""
    text = text or ""
    names = frozenset(n.casefold() for n in names)
    if not kept:
        return _carries_content(text, names, False)
    return _kept(_CARRIES, text, names, lambda: _carries_content(text, names, True))


def _carries_content(text: str, names: frozenset[str], kept: bool) -> bool:
    specific = specific_words(text, names, kept)
    if len(set(specific)) < MIN_SPECIFIC:
        return False
    # a shared photo's caption is a model's description of it: it says what a turn is about when
    # the speaker shows the photo ("Look at him! [... a turtle on a rock]"), not when a photo
    # rides along with something else ("You rock! Keep it up! [... a basketball on a court]" is
    # encouragement, not a note on basketball)
    if _CAPTION.search(text or ""):
        said = _CAPTION.sub(" ", text)
        if len(set(specific_words(said, names))) < MIN_SPECIFIC and not _SHOWS.search(_unlabelled(said)):
            return False
    # both counted with repeats: a guide's "1. Step 1 of installing the sync plugin" nine times over
    # says "step" nine times and "installing", "sync", "plugin" nine times each
    chatter = sum(1 for w in content_words(body(text)) if is_chatter(w))
    return len(specific) >= MIN_SHARE * (len(specific) + chatter)

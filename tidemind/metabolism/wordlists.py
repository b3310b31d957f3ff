"""Closed word lists the offline tag vocabulary cuts phrases at (English; no model, no download).

A tag is a name or a noun phrase. Without a part-of-speech tagger, the words that can never be
one, or never end one, are listed: function words, verbs that are rarely nouns (with their
inflections), adverbs and interjections, evaluative and size adjectives, and nouns too generic
to tag anything (time words, "thing", "photo"). Verbs that are as often nouns ("run", "change",
"review", "test", "plan", "support") are left out on purpose: "long run", "water change" and
"code review" are tags a person keeps, and a phrase like "sisters run" has to recur in the scope
before it is proposed, which it does not.
"""
from __future__ import annotations

from ..text import STOPWORDS


def _words(block: str) -> frozenset[str]:
    return frozenset(block.split())


FUNCTION = STOPWORDS | _words("""
across along among amongst around behind beside besides beyond despite inside onto outside per since
though throughout toward towards unless upon via whether within without yet also either neither nor
everyone everybody someone somebody anyone anybody nobody none one ones whatever whoever whichever
another else etc vs us every others whenever wherever however i'm i've i'll i'd you're you've you'll you'd he's she's it's we're we've
we'll they're they've they'll that's there's here's what's who's let's can't won't didn't doesn't isn't
wasn't aren't weren't couldn't shouldn't wouldn't haven't hasn't hadn't mustn't gonna wanna gotta kinda
sorta lemme dunno y'all ain't shall may might must can will would should could ought cannot
""")

# verbs that are rarely nouns; inflections are generated below ("help", "check", "offer", "update",
# "visit" are nouns as often: "help desk", "health check", "job offer" stay possible)
VERBS = _words("""
accept achieve add admit agree allow appear apply arrive ask assume attend avoid become begin believe
belong bring buy catch choose come complain confirm consider contain continue convince create decide define delete
deliver depend describe deserve destroy die disagree disappear discover discuss do eat enable encourage
enjoy ensure enter expect explain fetch find finish follow forget forgive get give go grab guess happen
hate have hear hope ignore imagine improve include intend introduce invite join keep kill know learn
leave let lie like listen live look lose love make manage mean meet mention move need notice obtain
occur own pick prefer prepare pretend prevent proceed propose prove provide publish pursue put quit
reach realise realize receive recognise recognize recommend recover reduce refuse relax remain remember
remind remove replace require resolve respond retry reveal say see seem send serve should shout show
set sit spend stand start stay succeed suggest suppose take talk teach tell tend thank think try turn
understand verify wait wake want wish wonder worry would write appreciate express tackle cultivate
celebrate explore win chill
manage browse delete remove insert configure disable enable expand navigate rename press select toggle
hover scroll adjust specify click tap customize install uninstall
""")

# past forms of irregular verbs (their base forms that are as often nouns, "drive", "ride",
# "build", "break", "freeze", are not in VERBS: "food drive", "club ride", "nightly build")
IRREGULAR_PAST = _words("""
began begun brought bought caught chose chosen came ate eaten fell fallen felt found forgot forgotten got
gotten gave given went gone grew grown heard held kept knew known laid led left lent lost made meant met
paid said saw seen sold sent sat slept spoke spoken spent stood took taken taught told thought threw
thrown understood woke woken wore worn won wrote written drove driven rode ridden ran broke broken built
fed flew flown swam sang sung drew drawn rose risen shot fought sought hid hidden shook stole stolen
struck tore torn bit bitten blew blown froze frozen hung became
""")

ADVERBS = _words("""
again ago ahead almost alone already always anyhow anyway anyways anywhere apart aside away back
else enough even ever everywhere finally here hopefully however indeed instead just later lately
maybe meanwhile never nowhere often once otherwise perhaps please pretty quite rather really seldom
somehow sometime sometimes somewhat somewhere soon still thus today together tomorrow tonight too
twice usually very well yesterday yet definitely actually basically literally totally probably
absolutely seriously honestly especially exactly nearly mostly super forward forwards
""")

INTERJECTIONS = _words("""
hey hi hello heya hiya wow whoa oh ooh ah aah aww yeah yes yep yup nope nah no ok okay haha hahaha
lol lmao omg thanks thank thx congrats congratulations sure sorry bye goodbye cheers hmm huh ugh yay
woohoo phew oops alright ha hehe btw fyi imo imho tbh asap woah whoah wowza yikes
""")

ADJECTIVES = _words("""
good great new old big little large nice best better worse worst bad huge tiny right lucky sweet worth
last first next previous same different other various own whole empty true false sure
happy sad glad proud awesome amazing cool fine easy simple quick fast slow early late recent
important possible impossible available certain clear special general main major minor extra several
many much few more most less least enough able ready busy tired excited exciting interesting funny
weird crazy wild beautiful lovely cute adorable perfect favorite favourite tough fair strong weak
young awful terrible wonderful fantastic incredible huge massive entire total overall current latest
usual normal typical common likely unlikely okay fun hard nervous scared worried stressed grateful
thankful inspiring inspired powerful helpful useful useless fresh quiet loud cheap expensive safe
rare whole kind nicer bigger smaller easier harder faster slower longer shorter higher lower older
newer cooler happier sadder
""")

# adjectives that make compound nouns ("long run", "dark chocolate", "half marathon", "weekly
# sync"): they may open a phrase, but are never a tag alone and never end one
MODIFIERS = _words("""
long short high low small free open real full public private hard soft hot cold dark light raw half
quarter double single daily weekly monthly yearly nightly
""")

# words after which an -ing form is a noun ("my writing group", "the meeting notes"), where
# elsewhere it is a verb ("making progress")
DETERMINERS = _words("a an the my your his her its our their this that these those some any no each every")

# after these a noun phrase starts ("in production", "to Celery" is left out: "to" also opens a verb)
PREPOSITIONS = _words("in on at for with from of about into onto over under after before by near behind via")

# nouns too generic to be a tag, or to end one
GENERIC = _words("""
thing things stuff way ways lot lots time times day days week weeks month months year years today
tonight morning mornings evening evenings night nights afternoon afternoons weekend weekends minute
minutes hour hours second seconds moment moments people person persons guy guys folks kind kinds
sort sorts type types bit bits part parts number numbers point points fact facts case cases example
examples reason reasons idea ideas question questions answer answers place places end side sides
photo photos picture pictures pic pics image images friend friends life lives everything something
man men woman women girl girls boy boys lady ladies front top bottom middle
anything nothing while chance chances matter matters stuff look looks feeling feelings sense
degree degrees percent percentage km kms kg kgs mg ml ppm euro euros dollar dollars cent cents meter meters
metre metres mile miles litre litres liter liters gram grams kilo kilos pound pounds cm mm inch inches foot
feet mph kph gb mb kb tb ms
ctrl cmd shift alt esc backspace pgup pgdn
introduction description usage functionality result results characters context area
""")

DAYS_MONTHS = _words("""
monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays fridays
saturdays sundays january february march april june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun
""")

NUMBER_WORDS = _words("""
zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen
seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred hundreds
thousand thousands million millions billion billions dozen dozens first second third fourth fifth
sixth seventh eighth ninth tenth once
""")

# capitalised words that are not names even mid-sentence
# keys are written capitalised ("press Ctrl+Shift+P"): that does not make them names
KEYS = _words("ctrl cmd shift alt esc backspace")
CAPITAL_STOP = _words("i ok todo fixme note notes am pm") | DAYS_MONTHS | KEYS

# titles that belong to the name after them ("Dr. Patel" is one name), never a tag alone
HONORIFICS = _words("dr mr mrs ms mx prof st sr jr")

# words ending in -ly / -ed that are nouns or names, not adverbs or participles
LY_NOUNS = _words("""
family italy july supply assembly reply rally ally belly bully jelly holly lily emily fly butterfly
anomaly monopoly apply reply poly
""") | MODIFIERS
ED_NOUNS = _words("bed red seed speed breed weed shed sled need feed hundred sacred bred reed deed tweed")


def _inflect(base: str) -> set[str]:
    """Third person, past and gerund of a regular verb (irregular forms are listed above)."""
    out = {base}
    if base.endswith(("s", "sh", "ch", "x", "z", "o")):
        out.add(base + "es")
    elif base.endswith("y") and base[-2:-1] not in set("aeiou"):
        out |= {base[:-1] + "ies", base[:-1] + "ied"}
    else:
        out.add(base + "s")
    if base.endswith("ie"):
        out.add(base[:-2] + "ying")
    elif base.endswith("e") and not base.endswith(("ee", "ye", "oe")):
        out |= {base[:-1] + "ing", base + "d"}
    else:
        out |= {base + "ing", base + "ed"}
        if (len(base) >= 3 and base[-1] not in "aeiouwxy" and base[-2] in "aeiou"
                and base[-3] not in "aeiou"):                       # stop -> stopping
            out |= {base + base[-1] + "ing", base + base[-1] + "ed"}
    return out


VERB_FORMS = frozenset(form for verb in VERBS for form in _inflect(verb)) | IRREGULAR_PAST

# never part of a tag
BREAK = (FUNCTION | VERB_FORMS | ADVERBS | INTERJECTIONS | ADJECTIVES | GENERIC | DAYS_MONTHS | NUMBER_WORDS) - MODIFIERS

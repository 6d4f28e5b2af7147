"""The small English world of the word-level decoder: its names, objects, places, nouns with
their plurals, adjectives, and which of them are held out.

Every word here is in the model's vocabulary and appears in its training text; a held-out
word never appears in the role it is tested in. A held-out name is never the giver or the
receiver of a training sentence about giving (it appears only in plain stories and repeated
word lists), a held-out object is never the thing given, and a held-out noun is never the
subject of a training sentence about agreement. So the held-out sentences test whether the
model learned the rule rather than the cases it saw.
"""

from __future__ import annotations

from dataclasses import dataclass

# (name, pronoun): the pronoun lets a story refer back to its character.
NAMES = (
    ("Mary", "She"), ("John", "He"), ("Anna", "She"), ("Tom", "He"), ("Lucy", "She"),
    ("Sam", "He"), ("Emma", "She"), ("Jack", "He"), ("Kate", "She"), ("Paul", "He"),
    ("Sara", "She"), ("Mark", "He"), ("Alice", "She"), ("David", "He"), ("Laura", "She"),
    ("Peter", "He"), ("Julia", "She"), ("Adam", "He"), ("Rose", "She"), ("Ben", "He"),
    ("Nina", "She"), ("Leo", "He"), ("Clara", "She"), ("Max", "He"), ("Eva", "She"),
    ("Hugo", "He"), ("Ella", "She"), ("Oscar", "He"), ("Lily", "She"), ("Ivan", "He"),
    ("Grace", "She"), ("Carl", "He"), ("Helen", "She"), ("Frank", "He"), ("Ruth", "She"),
    ("Victor", "He"), ("Iris", "She"), ("Simon", "He"), ("Diana", "She"), ("Felix", "He"),
)
# More names, for training only. With the 30 names above alone, the model learned its way
# to each name's own answer and chose the held-out ones right on 58% of the sentences: the
# heads that find the names barely attended to a name never seen in a gift sentence. With
# these 100 more, they attend to a held-out name as to any other (BENCHMARKS.md).
NAMES += (
    ("Amy", "She"), ("Bob", "He"), ("Chloe", "She"), ("Dan", "He"), ("Fiona", "She"),
    ("Greg", "He"), ("Hannah", "She"), ("Ian", "He"), ("Jane", "She"), ("Kevin", "He"),
    ("Lisa", "She"), ("Luke", "He"), ("Megan", "She"), ("Nick", "He"), ("Olivia", "She"),
    ("Owen", "He"), ("Polly", "She"), ("Ray", "He"), ("Sophie", "She"), ("Tim", "He"),
    ("Ursula", "She"), ("Vince", "He"), ("Wendy", "She"), ("Will", "He"), ("Zoe", "She"),
    ("Alan", "He"), ("Beth", "She"), ("Colin", "He"), ("Daisy", "She"), ("Eric", "He"),
    ("Flora", "She"), ("Gary", "He"), ("Holly", "She"), ("Harry", "He"), ("Ivy", "She"),
    ("Jake", "He"), ("Jess", "She"), ("Karl", "He"), ("Leah", "She"), ("Liam", "He"),
    ("Molly", "She"), ("Mike", "He"), ("Nora", "She"), ("Neil", "He"), ("Olga", "She"),
    ("Otto", "He"), ("Pam", "She"), ("Phil", "He"), ("Rita", "She"), ("Rob", "He"),
    ("Susan", "She"), ("Steve", "He"), ("Tina", "She"), ("Toby", "He"), ("Vera", "She"),
    ("Wade", "He"), ("Yara", "She"), ("Zack", "He"), ("Abby", "She"), ("Andy", "He"),
    ("Bella", "She"), ("Brian", "He"), ("Cathy", "She"), ("Chris", "He"), ("Dora", "She"),
    ("Dean", "He"), ("Edith", "She"), ("Ethan", "He"), ("Faye", "She"), ("Fred", "He"),
    ("Gina", "She"), ("Glen", "He"), ("Hazel", "She"), ("Henry", "He"), ("Irene", "She"),
    ("Isaac", "He"), ("Joan", "She"), ("Joel", "He"), ("Kim", "She"), ("Kyle", "He"),
    ("Lena", "She"), ("Lewis", "He"), ("Mia", "She"), ("Matt", "He"), ("Nell", "She"),
    ("Noah", "He"), ("Opal", "She"), ("Ollie", "He"), ("Pia", "She"), ("Pete", "He"),
    ("Queenie", "She"), ("Quinn", "He"), ("Rosa", "She"), ("Ryan", "He"), ("Tess", "She"),
    ("Ted", "He"), ("Una", "She"), ("Umar", "He"), ("Val", "She"), ("Vic", "He"),
)
HELD_OUT_NAMES = ("Grace", "Carl", "Helen", "Frank", "Ruth", "Victor", "Iris", "Simon",
                  "Diana", "Felix")

# Things one person gives another.
OBJECTS = ("drink", "book", "ball", "apple", "cake", "letter", "hat", "cup", "pen", "flower",
           "map", "coin", "ticket", "gift", "bag", "box", "kite", "toy", "shirt", "card",
           "lamp", "clock", "ring", "bowl", "plate", "bell", "scarf", "cookie")
HELD_OUT_OBJECTS = ("ring", "bowl", "plate", "bell", "scarf", "cookie")

PLACES = ("store", "park", "school", "beach", "garden", "market", "station", "library",
          "house", "farm", "river", "cafe", "museum", "office", "hospital", "zoo")

# (singular, plural) nouns for sentences about agreement.
NOUNS = (
    ("key", "keys"), ("box", "boxes"), ("dog", "dogs"), ("cat", "cats"), ("book", "books"),
    ("cup", "cups"), ("door", "doors"), ("chair", "chairs"), ("table", "tables"),
    ("window", "windows"), ("bag", "bags"), ("coat", "coats"), ("bird", "birds"),
    ("car", "cars"), ("tree", "trees"), ("shoe", "shoes"), ("cabinet", "cabinets"),
    ("house", "houses"), ("letter", "letters"), ("picture", "pictures"), ("lamp", "lamps"),
    ("boat", "boats"), ("bottle", "bottles"), ("drawer", "drawers"), ("horse", "horses"),
    ("painting", "paintings"),
)
HELD_OUT_NOUNS = ("lamp", "boat", "bottle", "drawer", "horse", "painting")

ADJECTIVES = ("old", "new", "big", "small", "red", "blue", "green", "happy", "quiet", "dark",
              "bright", "heavy", "clean", "dirty", "long", "short", "warm", "cold")
PREPOSITIONS = ("to", "near", "on", "under", "behind", "beside", "by", "in", "from", "of")
ANIMALS = ("dog", "cat", "bird", "horse", "fox", "rabbit", "duck", "fish")
FOODS = ("lunch", "dinner", "breakfast", "soup", "bread", "cake", "apple")


@dataclass(frozen=True)
class WorldSplit:
    """The words one split may use in the roles that are tested."""
    names: tuple[str, ...]
    objects: tuple[str, ...]
    nouns: tuple[tuple[str, str], ...]


def split(held_out: bool) -> WorldSplit:
    """The training split (held_out=False) or the held-out one: disjoint names, objects and
    nouns for the tested roles."""
    def keep(word: str, held: tuple[str, ...]) -> bool:
        return (word in held) == held_out

    return WorldSplit(
        names=tuple(n for n, _ in NAMES if keep(n, HELD_OUT_NAMES)),
        objects=tuple(o for o in OBJECTS if keep(o, HELD_OUT_OBJECTS)),
        nouns=tuple(pair for pair in NOUNS if keep(pair[0], HELD_OUT_NOUNS)),
    )


PRONOUN = dict(NAMES)

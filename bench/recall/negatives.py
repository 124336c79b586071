"""Queries with no relevant memory, for calibrating the relevance score.

General-knowledge questions far from every BEAM conversation's topic: asked against any
conversation, nothing there answers them. They are the bench's own (written for it), so
"unrelated query" negatives are not tuned to any data set memoryd does not have.
"""

from __future__ import annotations

UNRELATED_QUERIES: tuple[str, ...] = (
    "what is the capital of France",
    "how tall is Mount Everest",
    "who painted the Mona Lisa",
    "what is the boiling point of water at sea level",
    "how many legs does a spider have",
    "when did the Western Roman Empire fall",
    "what is the speed of light in a vacuum",
    "how do volcanoes form",
    "what language is spoken in Brazil",
    "who won the 1998 football world cup",
    "how do I fix a flat bicycle tyre",
    "what do koalas eat",
    "how far is the moon from the earth",
    "when should tulip bulbs be planted",
    "what is the chemical symbol for gold",
    "how long do elephants live in the wild",
    "which planet has the most moons",
    "how do you say thank you in Japanese",
    "what causes the northern lights",
    "what is the melting point of iron",
    "how many players are on a rugby union team",
    "what is the main ingredient of guacamole",
    "why is the sky blue",
    "how deep is the Mariana Trench",
    "what is the largest desert on Earth",
    "who discovered penicillin",
    "how do bees make honey",
    "what is the tallest tree species",
    "how many bones are in the human body",
    "what is the currency of Switzerland",
    "how does a rainbow form",
    "what was the first animal in space",
)

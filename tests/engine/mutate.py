"""Random edits of byte strings, for the property tests that hold a C
reader and its Python reference together on what is near a real input."""

import random


def mutated(rnd: random.Random, seeds, alphabet: bytes, edits: int, dele: float, ins: float) -> bytes:
    """One of ``seeds`` with 1 to ``edits`` random edits, each a deletion
    (chance ``dele``), an insertion (up to ``ins``) or else a replacement of
    one byte by one of ``alphabet``."""
    base = bytearray(rnd.choice(seeds))
    for _ in range(rnd.randint(1, edits)):
        i = rnd.randint(0, len(base))
        op = rnd.random()
        if op < dele and base:
            del base[min(i, len(base) - 1)]
        elif op < ins:
            base[i:i] = bytes([rnd.choice(alphabet)])
        elif base:
            base[min(i, len(base) - 1)] = rnd.choice(alphabet)
    return bytes(base)

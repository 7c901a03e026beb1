/*
 * subject_rule.h: the engine's rule for a publish subject (or reply) made of
 * ASCII characters (tclnats_py/engine/subjects.py, _ASCII_PLAIN), for the C
 * fast paths of both faces (natsproto.c: the asyncio face's PUB frames;
 * tclfast.c: the Tcl face's publish method).  Dot-separated non-empty tokens
 * of letters, digits and - ! # $ % & ' ( ) + , / : ; < = ? @ ^ _ ` | ~.
 * Anything else (other bytes, UTF-8 included) is not "plain": the caller
 * leaves it to the engine, which also knows Unicode letters and digits.
 */
#ifndef TCLNATS_SUBJECT_RULE_H
#define TCLNATS_SUBJECT_RULE_H

#include <stddef.h>
#include <string.h>

static int
tclnats_token_char(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
           || (c != 0 && c < 0x80 && strchr("-!#$%&'()+,/:;<=?@^_`|~", c) != NULL);
}

static int
tclnats_plain_subject(const unsigned char *s, size_t n)
{
    size_t i;
    int start = 1;   /* at the start of a token */
    if (n == 0)
        return 0;
    for (i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '.') {
            if (start)
                return 0;   /* an empty token */
            start = 1;
        } else if (tclnats_token_char(c)) {
            start = 0;
        } else {
            return 0;
        }
    }
    return !start;
}

#endif

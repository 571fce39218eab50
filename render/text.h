/*
 * text.h - strings from a log, made safe to print on a terminal, and sizes
 * written the one way every command writes them.
 *
 * A log holds text the traced program chose: file and thread names, pool
 * names, command lines, marks.  Printed raw, a terminal escape or a newline in
 * one rewrites the screen or forges a line of output.  Text output escapes
 * them visibly: control characters (C0, DEL, C1) as \xNN (\n, \t, \r as
 * such), a backslash as \\, and bytes that are not UTF-8 as \xNN; the rest of
 * UTF-8 passes through.  The result is always valid UTF-8.
 */
#ifndef RN_TEXT_H
#define RN_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* s (NUL-terminated; NULL prints as "?") escaped into buf (always
 * terminated; cut at a whole escape when it does not fit).  Returns buf. */
char *rn_text(char *buf, size_t len, const char *s);
/* The same for n bytes that may hold NULs. */
char *rn_text_n(char *buf, size_t len, const char *s, size_t n);
/* Whether rn_text_n would change the n bytes at s (a control character, a
 * backslash or a byte that is not UTF-8 among them). */
int rn_needs_escape(const char *s, size_t n);
/* Length of the valid UTF-8 sequence at s (1 to 4), 0 when s does not start
 * one (overlong forms, surrogates, code points past U+10FFFF); the JSON
 * writer and the text escapes judge bytes alike. */
size_t rn_utf8_len(const unsigned char *s, size_t left);
/* Write s escaped to f. */
void rn_fputs(const char *s, FILE *f);

/* "512 B", "1.5 MiB", "10.0 GiB": binary units, one decimal. */
void rn_bytes(uint64_t n, char *buf, size_t len);

#endif

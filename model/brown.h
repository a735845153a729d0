/* The Brown corpus as distributed (one file per text, tokens "word/TAG")
 * turned into plain English text for a byte-level model. */
#ifndef MURMUR_BROWN_H
#define MURMUR_BROWN_H

#include <stddef.h>

/* Converts the tagged text in[0..n) into plain text: tags stripped (after
 * the last '/'), `` and '' turned into ", no space before closing
 * punctuation, one paragraph per line with a blank line between paragraphs
 * (headlines get a paragraph of their own). On success *out is a malloc'd
 * buffer of *outlen bytes (the caller frees it) and 0 is returned; on bad
 * input -1, with the line and what is wrong in err. */
int mm_brown_detag(const char *in, size_t n, char **out, size_t *outlen,
                   char *err, size_t errlen);

#endif

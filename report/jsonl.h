/* A reader for one line of a metrics.jsonl file: a flat JSON object whose
 * values are numbers, strings, booleans, null, arrays of numbers, or one
 * level of object mapping keys to numbers or strings. Anything deeper is accepted and
 * skipped (type MM_J_OTHER) so a new field never costs the whole line.
 * NaN, Infinity and -Infinity (as Python and printf("%g") write them) are
 * read as numbers, because a diverged run must still be reported; a number
 * beyond the range of a double (1e999) is refused, since no writer makes
 * one. A key given twice: the first counts. Strings are not checked for
 * valid UTF-8 (the writer copies path bytes as they are). */
#ifndef MURMUR_JSONL_H
#define MURMUR_JSONL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mm_json_type { MM_J_NUM, MM_J_STR, MM_J_BOOL, MM_J_NULL, MM_J_ARR, MM_J_OBJ, MM_J_OTHER };

typedef struct {
    char *key;
    double num;      /* NaN for a string */
    char *str;       /* a string value (unescaped), else NULL */
} mm_json_kv;

typedef struct {
    char *key;
    enum mm_json_type type;
    double num;      /* NUM, BOOL (0/1) */
    char *raw;       /* NUM: the token, for integers beyond 2^53 */
    char *str;       /* STR, unescaped UTF-8 */
    double *arr;     /* ARR: numbers (null elements read as NaN) */
    size_t n_arr;
    mm_json_kv *obj; /* OBJ: key -> number or string */
    size_t n_obj;
} mm_json_field;

typedef struct {
    mm_json_field *f;
    size_t n, cap;
} mm_json_obj;

/* Parse line[0..len) (a trailing newline is allowed). 0 on success; -1 with
 * a message naming the byte offset in err. o is reset first; free it with
 * mm_json_free after either outcome. */
int mm_json_parse(const char *line, size_t len, mm_json_obj *o, char *err, size_t errlen);
void mm_json_free(mm_json_obj *o);

const mm_json_field *mm_json_get(const mm_json_obj *o, const char *key);
bool mm_json_num(const mm_json_obj *o, const char *key, double *v);
/* Exact for non-negative integers written without fraction or exponent. */
bool mm_json_u64(const mm_json_obj *o, const char *key, uint64_t *v);
const char *mm_json_str(const mm_json_obj *o, const char *key);

#endif

/* quantity.h - Kubernetes resource quantities ("100m", "1.5Gi", "12e6"): parse, add, format.
 *
 * The cluster status controller sums Nodes' allocatable and Pods' requests into a
 * Cluster's resourceSummary; those sums must come out as Kubernetes would write them
 * ("100m" + "1" is "1100m", "1Gi" + "512Mi" is "1536Mi"), or every comparison with the
 * stored status would see a change that is only a spelling.
 *
 * A quantity is held exactly as a count of nano-units in a 128-bit integer: every
 * suffix Kubernetes accepts (n u m "" k M G T P E, Ki Mi Gi Ti Pi Ei, and e<exp>) is a
 * whole number of nano-units, and 2^127 nano-units leave room for any realistic fleet
 * (the largest suffix, E, is 10^27 nano-units). Digits below a nano-unit round up, as
 * Kubernetes rounds quantities it cannot hold.
 *
 * Formatting follows Kubernetes' canonical form: the format of the quantity (binary
 * suffixes, decimal suffixes, or a decimal exponent) is kept, the mantissa is the
 * smallest whole number with the largest suffix that represents the value exactly, and
 * binary values under 1024 (or not a whole number of units) are written in decimal.
 *
 * Pure functions over caller-owned memory: any thread. */
#ifndef FL_QUANTITY_H
#define FL_QUANTITY_H

#include <stdbool.h>
#include <stddef.h>

enum fl_quantity_format {
    FL_QUANTITY_NONE = 0,         /* a zeroed fl_quantity: an empty sum */
    FL_QUANTITY_DECIMAL_SI,       /* "", m, k, M, ... */
    FL_QUANTITY_BINARY_SI,        /* Ki, Mi, Gi, ... */
    FL_QUANTITY_DECIMAL_EXPONENT, /* 12e6 */
};

__extension__ typedef __int128 fl_quantity_nano;

typedef struct fl_quantity {
    fl_quantity_nano nano;        /* the value in units of 10^-9 */
    int format;                   /* enum fl_quantity_format */
} fl_quantity;

/* Parse s (the whole string: an optional sign, digits with an optional fraction, an
 * optional suffix). Returns 0, or FL_EINVAL for anything Kubernetes would refuse or a
 * value too large to hold; *out is zeroed on failure. */
int fl_quantity_parse(const char *s, fl_quantity *out);

/* acc += q. The sum keeps acc's format (a zeroed acc takes q's), as Kubernetes'
 * Quantity.Add does. Returns 0, or FL_EINVAL on overflow (acc unchanged). */
int fl_quantity_add(fl_quantity *acc, const fl_quantity *q);

/* The canonical text of q into buf (always NUL-terminated; 48 bytes always suffice).
 * Returns the length written. A zeroed quantity is "0". */
size_t fl_quantity_format(const fl_quantity *q, char *buf, size_t cap);

/* -1, 0 or 1 as a is less than, equal to or greater than b (formats ignored). */
int fl_quantity_cmp(const fl_quantity *a, const fl_quantity *b);

static inline bool fl_quantity_is_zero(const fl_quantity *q)
{
    return q->nano == 0;
}

#endif

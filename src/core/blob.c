/* blob.c - immutable, reference-counted byte strings (see blob.h).
 *
 * A blob is one allocation: the header and the bytes behind it. The count is
 * touched with __atomic builtins so any thread may ref or unref; the bytes are
 * never written after fl_blob_new returns (or, for fl_blob_alloc, after its maker filled
 * them and before it handed the blob to anyone), so readers need no lock. The final
 * unref synchronises with every earlier one (acq_rel) before the free. */
#include "core/blob.h"

#include <stdlib.h>
#include <string.h>

#include "core/keep.h"
#include "core/mem.h"

fl_blob *fl_blob_alloc(size_t len)
{
    fl_blob *b = fl_malloc(sizeof(*b) + len + 1);
    b->refs = 1;
    b->len = len;
    b->data[len] = '\0';
    return b;
}

fl_blob *fl_blob_new(const char *data, size_t len)
{
    fl_blob *b = fl_blob_alloc(len);
    if (len)
        memcpy(b->data, data, len);
    return b;
}

fl_blob *fl_blob_new_kept(const char *data, size_t len)
{
    fl_blob *b = fl_keep_malloc(sizeof(*b) + len + 1);
    b->refs = 1;
    b->len = len;
    memcpy(b->data, data, len);
    b->data[len] = '\0';
    return b;
}

fl_blob *fl_blob_ref(fl_blob *b)
{
    if (b)
        __atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
    return b;
}

void fl_blob_unref(fl_blob *b)
{
    if (b && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0)
        fl_keep_free(b); /* from malloc or, kept, from the slabs */
}

/* htab.c - the shared chained hash table's changes: add, remove, replace, growth (see htab.h). */
#include "core/htab.h"

#include <stdlib.h>

#include "core/mem.h"

#define HTAB_FIRST 64

void fl_htab_init(fl_htab *t, size_t nbuckets)
{
    size_t n = 1;
    while (n < nbuckets)
        n *= 2;
    *t = (fl_htab){.first = nbuckets ? n : HTAB_FIRST};
}

void fl_htab_close(fl_htab *t)
{
    size_t first = t->first;
    free(t->b);
    *t = (fl_htab){.first = first};
}

/* Twice the buckets, the chains rebuilt from the hashes the nodes keep. */
static void grow(fl_htab *t)
{
    size_t nb = t->nb ? t->nb * 2 : t->first ? t->first : HTAB_FIRST;
    fl_hnode **b = fl_calloc(nb, sizeof *b);
    for (size_t i = 0; i < t->nb; i++)
        for (fl_hnode *n = t->b[i], *next; n; n = next) {
            next = n->next;
            fl_hnode **h = &b[n->hash & (nb - 1)];
            n->next = *h;
            *h = n;
        }
    free(t->b);
    t->b = b;
    t->nb = nb;
}

void fl_htab_add(fl_htab *t, fl_hnode *node, uint64_t hash)
{
    if (t->n + 1 > t->nb)
        grow(t);
    fl_hnode **h = &t->b[hash & (t->nb - 1)];
    node->hash = hash;
    node->next = *h;
    *h = node;
    t->n++;
}

/* The link that points to node (it must be in t). */
static fl_hnode **link_of(fl_htab *t, const fl_hnode *node)
{
    fl_hnode **pp = &t->b[node->hash & (t->nb - 1)];
    while (*pp != node)
        pp = &(*pp)->next;
    return pp;
}

void fl_htab_remove(fl_htab *t, fl_hnode *node)
{
    *link_of(t, node) = node->next;
    node->next = NULL;
    t->n--;
}

void fl_htab_replace(fl_htab *t, fl_hnode *old, fl_hnode *node)
{
    fl_hnode **pp = link_of(t, old);
    node->hash = old->hash;
    node->next = old->next;
    *pp = node;
    old->next = NULL;
}

/* parallel.h - a parallel loop over one process-wide pool of threads. */
#ifndef FL_PARALLEL_H
#define FL_PARALLEL_H

/* Call fn(ctx, i) for i in [0, n) on up to max_threads threads (the caller's among them)
 * and return when all are done. fn must be thread-safe. For a reconcile that writes many
 * independent objects (a binding's Works): concurrent writes share the store's group
 * commits, so 100 Works cost a few commits instead of 100; and for decoding a long list
 * on more than one core. */
void fl_parallel(int n, int max_threads, void (*fn)(void *ctx, int i), void *ctx);

#endif

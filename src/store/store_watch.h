/* store_watch.h - watch fan-out shared by store backends (internal to src/store).
 *
 * The hub owns a ring of the most recent events and the list of open watches. A
 * backend publishes each committed batch of events once; the hub pushes a pointer
 * to every event into the bounded queue of every watch whose prefix matches (one
 * atomic increment per push, values are never copied). Revisions must increase but may
 * skip (an etcd store's revisions count its whole cluster's transactions): the ring keeps
 * a slot per revision, empty for the missing ones. A watch that starts below
 * the ring is first fed from the backend's log through a replay callback, lazily,
 * from the thread that calls fl_watch_next.
 *
 * The public half of the watch API (fl_watch_next, fl_watch_cancel, fl_watch_free)
 * is implemented in store_watch.c as well; see store.h for its contract. */
#ifndef FL_STORE_WATCH_H
#define FL_STORE_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* A reference-counted event: the public fl_watch_event plus its count and the key bytes. */
typedef struct fl_store_event {
    fl_watch_event ev;
    int refs; /* atomic */
    char key[];
} fl_store_event;

/* New event with one reference; takes over the caller's reference to value. */
fl_store_event *fl_watch_event_new(int type, const char *key, int64_t rev, fl_blob *value);
fl_store_event *fl_watch_event_ref(fl_store_event *e);
void fl_watch_event_unref(fl_store_event *e); /* NULL-safe */

/* Read from the backend's log the events with from < rev <= to for keys under
 * prefix, in revision order, at most max of them, into out[] (new references);
 * *n is how many. Returns 0, FL_EEXPIRED if revisions above `from` were compacted
 * away, or FL_EIO. Called from watcher threads, concurrently. */
typedef int (*fl_watch_replay_fn)(void *ctx, const char *prefix, int64_t from, int64_t to, size_t max,
                                  fl_store_event **out, size_t *n);

typedef struct fl_watch_hub fl_watch_hub;

/* New hub whose history starts at revision head (nothing in the ring yet).
 * ring_size is rounded up to a power of two; ring_bytes (0 = no cap) bounds the bytes of
 * the values the ring keeps alive: past it the oldest events leave the ring early, and a
 * watch from below the ring reads them from the log. backlog bounds each watch's queue. */
fl_watch_hub *fl_watch_hub_new(int64_t head, size_t ring_size, size_t ring_bytes, size_t backlog,
                               fl_watch_replay_fn replay, void *replay_ctx);
/* Close every watch (their fl_watch_next returns FL_ECLOSED), wait for replay reads
 * in flight to finish, and drop the backend's reference. Watches still open keep
 * the hub's memory alive until fl_watch_free; they never call the replay callback
 * again, so the backend may close its database after this returns. */
void fl_watch_hub_free(fl_watch_hub *h);

/* Publish committed events, in increasing revision order. The hub takes over the
 * caller's reference to each event. Called by the backend's single writer thread. */
void fl_watch_hub_publish(fl_watch_hub *h, fl_store_event **evs, size_t n);

/* Open a watch for revisions > from_rev under prefix (the caller has already
 * checked from_rev against the compaction revision). *out set on every path.
 * Returns 0 or FL_ECLOSED. */
int fl_watch_hub_open(fl_watch_hub *h, const char *prefix, int64_t from_rev, fl_watch **out);

/* Open a watch for revisions > from_rev under prefix whose history the caller
 * supplies: hist[0..nhist) are the events (from_rev, head] in revision order (the
 * hub filters them by prefix and takes its own references). The caller must hold
 * whatever lock it publishes under, so that no revision is published meanwhile;
 * the ring and the replay callback are not used. For backends whose history is
 * all in memory. *out set on every path. Returns 0 or FL_ECLOSED. */
int fl_watch_hub_open_history(fl_watch_hub *h, const char *prefix, int64_t from_rev, fl_store_event *const *hist,
                              size_t nhist, fl_watch **out);

size_t fl_watch_hub_count(fl_watch_hub *h);

/* Expire every open watch (its fl_watch_next answers FL_EEXPIRED from then on: the client
 * re-lists) and empty the ring; the hub's history starts again at head when that is above
 * its own. For a backend whose state was reloaded because the events in between are gone
 * (an etcd store that lagged past the cluster's compaction). Any thread. */
void fl_watch_hub_expire_all(fl_watch_hub *h, int64_t head);

/* Empty the ring: watches opened later from below head replay from the log. */
void fl_watch_hub_rest(fl_watch_hub *h);
/* The bytes of the values of the events in the ring. */
size_t fl_watch_hub_ring_bytes(fl_watch_hub *h);

#endif

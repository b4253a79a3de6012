/* events.h - Kubernetes Events from controllers: why a template was claimed, why a cluster was
 * filtered out, why a Work failed, readable with `kubectl describe` and `kubectl get events`.
 *
 * Controllers call fl_event() from their reconcile loops; it never blocks on the network. The
 * recorder queues the event and one thread of its own writes it: a new core/v1 Event, or, when
 * the same object already got the same type, reason and message within the last ten minutes,
 * the existing Event with its count raised and lastTimestamp moved (as client-go's recorder
 * does), so a reconcile that repeats itself does not flood the store. Repeats coming faster
 * than one per two seconds are counted in memory and written together, at most every two
 * seconds per Event.
 *
 * Bounded: at most FL_EVENTS_QUEUE_MAX events wait (more are dropped, and the drop logged once a
 * minute), and the memory of recent events holds at most FL_EVENTS_RECENT_MAX entries.
 *
 * Owned by the controller manager (controller.h); every function is thread-safe. */
#ifndef FL_EVENTS_H
#define FL_EVENTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "client/client.h"

#define FL_EVENTS_QUEUE_MAX 10000
#define FL_EVENTS_RECENT_MAX 4096

typedef struct fl_recorder fl_recorder;

/* component: the reporting controller's name ("flotilla-controller-manager"). cp borrowed. */
fl_recorder *fl_recorder_new(fl_client *cp, const char *component);
/* Hold Events back while busy(ctx) says the machine has more urgent work (the execution
 * controller: Works waiting for delivery), each at most max_ms after it was recorded; busy is
 * asked every 100 ms meanwhile, with the recorder's lock held (so it must not record events).
 * busy NULL: no holding. Returns with no call of the previous busy in progress or to come. */
void fl_recorder_hold_while(fl_recorder *r, bool (*busy)(void *ctx), void *ctx, int64_t max_ms);
/* Write what is queued (for at most a second), stop the thread, free. NULL-safe. */
void fl_recorder_free(fl_recorder *r);

/* Record an event about obj (any object with apiVersion, kind and metadata; only read).
 * type is "Normal" or "Warning"; reason is CamelCase ("ScheduleBindingSucceed"); message is
 * printf-style. A NULL recorder or obj is ignored. Any thread; never blocks on I/O. */
void fl_event(fl_recorder *r, const json_t *obj, const char *type, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif

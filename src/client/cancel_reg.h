/* cancel_reg.h - what a transfer registers with a cancellation token while it runs
 * (internal to src/client: client.c registers, cancel.c wakes).
 *
 * fl_client_cancel_fire() wakes every registered transfer at once: a curl transfer
 * through its multi handle (curl_multi_wakeup), an in-process stream through its own
 * wake function. */
#ifndef FL_CLIENT_CANCEL_REG_H
#define FL_CLIENT_CANCEL_REG_H

#include <curl/curl.h>

#include "client/client.h"

/* A multi handle registered with a token while its transfer runs (lives on that stack). */
typedef struct cancel_reg {
    CURLM *multi;                 /* a curl transfer's, or NULL */
    void (*wake)(void *arg);      /* a local stream's: wake its blocked read */
    void *arg;
    struct cancel_reg *next;
} cancel_reg;

/* Register r (owned by the caller, on its stack; it must stay until unregistered) with k,
 * and take it off again. Any thread. */
void fl_client_cancel_register(fl_client_cancel *k, cancel_reg *r);
void fl_client_cancel_unregister(fl_client_cancel *k, cancel_reg *r);

#endif

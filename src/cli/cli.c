/* cli.c - what every long-running subcommand does the same way (see cli.h). */
#include "cli/cli.h"

#include <pthread.h>
#include <string.h>

void fl_cli_block_signals(sigset_t *sigs)
{
    sigemptyset(sigs);
    sigaddset(sigs, SIGTERM);
    sigaddset(sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
}

bool fl_cli_is_loopback(const char *listen)
{
    return !strncmp(listen, "127.", 4) || !strncmp(listen, "[::1]:", 6) || !strncmp(listen, "localhost:", 10);
}

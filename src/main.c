/* main.c - `flotilla <command>`: one binary, subcommands like k3s. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/log.h"
#include "core/mem.h"

static void usage(FILE *f)
{
    fprintf(f, "Usage: flotilla <command> [options]\n"
               "\n"
               "Commands:\n"
               "  server    run the control plane (Kubernetes API + store)\n"
               "  agent     pull mode: register a member cluster and deliver its Works from beside it\n"
               "  member    run simulated member clusters\n"
               "  up        a control plane plus simulated members, joined and Ready\n"
               "  ctl       multi-cluster verbs kubectl lacks: join, unjoin\n"
               "  version   print the version\n"
               "\n"
               "Run 'flotilla <command> --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
    fl_mem_init();
    fl_log_enabled(FL_LOG_ERROR); /* read FLOTILLA_LOG once, before any thread starts */
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "server"))
        return fl_cmd_server(argc - 1, argv + 1);
    if (!strcmp(cmd, "ctl"))
        return fl_cmd_ctl(argc - 1, argv + 1);
    if (!strcmp(cmd, "agent"))
        return fl_cmd_agent(argc - 1, argv + 1);
    if (!strcmp(cmd, "member"))
        return fl_cmd_member(argc - 1, argv + 1);
    if (!strcmp(cmd, "up"))
        return fl_cmd_up(argc - 1, argv + 1);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("flotilla v0.1.0 (Kubernetes API v1.32)\n");
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "flotilla: unknown command \"%s\"\n", cmd);
    usage(stderr);
    return 2;
}

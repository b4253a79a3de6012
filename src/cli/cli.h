/* cli.h - entry points of the `flotilla` subcommands (one file each under src/cli/). */
#ifndef FL_CLI_H
#define FL_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Block SIGTERM and SIGINT (into *sigs, for sigwait) and ignore SIGPIPE. Call before any
 * thread starts, so only the waiting thread sees the signals. */
void fl_cli_block_signals(sigset_t *sigs);

/* Is a --listen ADDR:PORT a loopback address (where plain HTTP is allowed)? */
bool fl_cli_is_loopback(const char *listen);

/* A client for the control plane named by --kubeconfig/--context (NULL: kubectl's rules,
 * $KUBECONFIG then ~/.kube/config), for `flotilla ctl VERB`. Returns 0, or 1 after printing
 * one line "flotilla ctl VERB: control plane kubeconfig: ..." on stderr. */
struct fl_client;
int fl_cli_control_plane(const char *kubeconfig, const char *context, const char *verb, struct fl_client **out);

/* A flag of a `flotilla ctl` verb that takes a value: "--name VALUE", "--name=VALUE", "-short
 * VALUE" (or "-name VALUE"). The value is stored as a const char * at off in the verb's options. */
typedef struct fl_cli_flag {
    const char *name, *shortname; /* shortname may be NULL */
    size_t off;
} fl_cli_flag;

/* argv[*i] starts with '-': find it among flags[0..n) and store its value into opts, taking the
 * next argument (and advancing *i) unless it came with '='. NULL when taken, else a usage error's
 * format with one %s for the flag as written. */
const char *fl_cli_take_flag(const fl_cli_flag *flags, size_t n, int argc, char **argv, int *i, void *opts);

/* Go's durations as kubectl takes them ("500ms", "30s", "2m", "1h", "1m30s"; a bare number
 * is seconds) in milliseconds; -1 when malformed. */
int64_t fl_cli_duration_ms(const char *s);
/* Whether ref is KIND/NAME: one '/', something on each side. */
bool fl_cli_kind_name(const char *ref);

/* Each returns the process exit code: 0 ok, 1 failure, 2 usage error. */
int fl_cmd_server(int argc, char **argv);
int fl_cmd_ctl(int argc, char **argv);
int fl_cmd_member(int argc, char **argv);
int fl_cmd_up(int argc, char **argv);
int fl_cmd_agent(int argc, char **argv);

/* `flotilla ctl suspend|resume ...` (suspend_cmd.c); argv holds what follows "ctl", flags
 * included, the verb itself excluded. */
int fl_ctl_suspend(bool suspend, int argc, char **argv);

/* `flotilla ctl kubeconfig ...` (kubeconfig_cmd.c); argv as fl_ctl_suspend's. */
int fl_ctl_kubeconfig(int argc, char **argv);

#endif

/* cli.c - what every long-running subcommand does the same way (see cli.h). */
#include "cli/cli.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/kubeconfig.h"
#include "core/err.h"

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

int fl_cli_control_plane(const char *kubeconfig, const char *context, const char *verb, fl_client **out)
{
    fl_kubeconfig kc;
    char *err = NULL;
    *out = NULL;
    int rc = fl_kubeconfig_load(kubeconfig, context, &kc, &err);
    if (rc == 0)
        rc = fl_client_new(&kc, &(fl_client_options){.user_agent = "flotilla-ctl", .timeout_ms = 30000}, out, &err);
    fl_kubeconfig_close(&kc);
    if (rc) {
        fprintf(stderr, "flotilla ctl %s: control plane kubeconfig: %s\n", verb, err ? err : fl_strerror(rc));
        free(err);
        return 1;
    }
    return 0;
}

const char *fl_cli_take_flag(const fl_cli_flag *flags, size_t n, int argc, char **argv, int *i, void *opts)
{
    const char *a = argv[*i];
    bool dbl = a[1] == '-';
    const char *f = a + (dbl ? 2 : 1);
    size_t len = strcspn(f, "=");
    size_t k;
    for (k = 0; k < n; k++) {
        bool by_name = strlen(flags[k].name) == len && !strncmp(flags[k].name, f, len);
        bool by_short = !dbl && flags[k].shortname && strlen(flags[k].shortname) == len &&
                        !strncmp(flags[k].shortname, f, len);
        if (by_name || by_short)
            break;
    }
    if (k == n)
        return "unknown flag %s";
    const char *v = f[len] == '=' ? f + len + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
    if (!v || !*v)
        return "flag %s needs a value";
    *(const char **)((char *)opts + flags[k].off) = v;
    return NULL;
}

/* Go's durations as kubectl takes them: "500ms", "30s", "2m", "1h", "1m30s"; a bare number is
 * seconds. -1 when malformed. */
int64_t fl_cli_duration_ms(const char *s)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (isdigit((unsigned char)s[0]) && end && !*end)
        return v * 1000 <= 1e12 ? (int64_t)(v * 1000) : -1;
    double total = 0;
    const char *p = s;
    if (!*p)
        return -1;
    while (*p) {
        if (!isdigit((unsigned char)*p) && *p != '.')
            return -1;
        v = strtod(p, &end);
        if (end == p)
            return -1;
        p = end;
        double unit = -1;
        if (!strncmp(p, "ms", 2)) {
            unit = 1;
            p += 2;
        } else if (*p == 's' || *p == 'm' || *p == 'h') {
            unit = *p == 's' ? 1000 : *p == 'm' ? 60000 : 3600000;
            p++;
        }
        if (unit < 0)
            return -1;
        total += v * unit;
    }
    return total <= 1e12 ? (int64_t)total : -1;
}

bool fl_cli_kind_name(const char *ref)
{
    const char *slash = ref ? strchr(ref, '/') : NULL;
    return slash && slash != ref && slash[1] && !strchr(slash + 1, '/');
}

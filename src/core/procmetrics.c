/* procmetrics.c - the process_* metrics every Prometheus user expects, read from /proc.
 *
 * Nothing is counted between scrapes: a metrics hook (core/metrics.h) reads
 * /proc/self/stat (CPU time, virtual and resident size, threads, start time),
 * /proc/self/fd (open descriptors) and getrlimit (the descriptor limit) when /metrics is
 * rendered, and sets gauges and counters the client libraries of other languages name
 * the same way. A file that cannot be read leaves the previous value. */
#include "core/metrics.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Fields of /proc/self/stat after the command name (which may hold spaces and ')'):
 * utime 14, stime 15, num_threads 20, starttime 22, vsize 23, rss 24 (1-based, man 5 proc). */
typedef struct stat_fields {
    double utime_ticks, stime_ticks, threads, start_ticks, vsize, rss_pages;
} stat_fields;

static int read_stat(stat_fields *out)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    p++;
    /* field 3 (state) is the first after ')' */
    double v[25] = {0};
    int field = 2;
    for (char *tok = strtok(p, " "); tok && field < 24; tok = strtok(NULL, " ")) {
        field++;
        v[field] = strtod(tok, NULL);
    }
    if (field < 24)
        return -1;
    *out = (stat_fields){v[14], v[15], v[20], v[22], v[23], v[24]};
    return 0;
}

static double boot_time_s(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return 0;
    char line[256];
    double bt = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "btime ", 6)) {
            bt = strtod(line + 6, NULL);
            break;
        }
    fclose(f);
    return bt;
}

static double open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    double n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

static fl_metric_series *series(fl_metric_type type, const char *name, const char *help)
{
    return fl_metric_with(fl_metric_family(type, name, help, NULL, NULL, NULL, 0), NULL, NULL);
}

static void scrape(void *ctx)
{
    (void)ctx;
    double tick = (double)sysconf(_SC_CLK_TCK), page = (double)sysconf(_SC_PAGESIZE);
    stat_fields st;
    if (read_stat(&st) == 0 && tick > 0) {
        fl_metric_series *cpu =
            series(FL_METRIC_COUNTER, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.");
        /* a counter only adds: bring it up to the kernel's figure */
        double now = (st.utime_ticks + st.stime_ticks) / tick;
        if (now > fl_metric_value(cpu))
            fl_metric_add(cpu, now - fl_metric_value(cpu));
        fl_metric_set(series(FL_METRIC_GAUGE, "process_resident_memory_bytes", "Resident memory size in bytes."),
                      st.rss_pages * page);
        fl_metric_set(series(FL_METRIC_GAUGE, "process_virtual_memory_bytes", "Virtual memory size in bytes."),
                      st.vsize);
        fl_metric_set(series(FL_METRIC_GAUGE, "process_threads", "Number of OS threads in the process."), st.threads);
        fl_metric_set(series(FL_METRIC_GAUGE, "process_start_time_seconds",
                             "Start time of the process since the Unix epoch in seconds."),
                      boot_time_s() + st.start_ticks / tick);
    }
    double fds = open_fds();
    if (fds >= 0)
        fl_metric_set(series(FL_METRIC_GAUGE, "process_open_fds", "Number of open file descriptors."), fds);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        fl_metric_set(series(FL_METRIC_GAUGE, "process_max_fds", "Maximum number of open file descriptors."),
                      rl.rlim_cur == RLIM_INFINITY ? -1 : (double)rl.rlim_cur);
}

void fl_procmetrics_register(void)
{
    fl_metrics_on_scrape(scrape, NULL);
}

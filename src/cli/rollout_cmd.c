/* rollout_cmd.c - `flotilla ctl rollout SUBCOMMAND ...`: hands each subcommand to the file
 * that implements it. The staged rollout's status|pause|resume|approve|abort live in
 * rollout_stage_cmd.c; the revisions' history|undo are added beside them by their own file.
 * argv: what follows "ctl", the verb removed, so argv[0] is the subcommand. */
#include <stdio.h>
#include <string.h>

#include "cli/ctl_out.h"
#include "cli/rollout_stage_cmd.h"

int fl_ctl_rollout(int argc, char **argv);

int fl_ctl_rollout(int argc, char **argv)
{
    /* the subcommand is the first argument that is not a flag (or a flag's value) */
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            break;
        if (argv[i][0] == '-') {
            static const char *const with_value[] = {"-n", "--namespace", "-o", "--output", "--kubeconfig",
                                                     "--context", "--timeout", "--to-revision", NULL};
            for (int k = 0; with_value[k]; k++)
                if (!strcmp(argv[i], with_value[k]))
                    i++;
            continue;
        }
        if (fl_ctl_rollout_stage_has(argv[i]))
            return fl_ctl_rollout_stage(argc, argv);
        break;
    }
    if (argc && (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help"))) {
        printf("Usage: flotilla ctl rollout status|pause|resume|approve|abort KIND/NAME [options]\n"
               "(flotilla ctl rollout SUBCOMMAND --help for each)\n");
        return 0;
    }
    return fl_ctl_out_usage("rollout", "%s", "expected a subcommand: status, pause, resume, approve or abort");
}

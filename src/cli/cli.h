/* cli.h - entry points of the `flotilla` subcommands (one file each under src/cli/). */
#ifndef FL_CLI_H
#define FL_CLI_H

/* Each returns the process exit code: 0 ok, 1 failure, 2 usage error. */
int fl_cmd_server(int argc, char **argv);
int fl_cmd_ctl(int argc, char **argv);
int fl_cmd_member(int argc, char **argv);
int fl_cmd_up(int argc, char **argv);
int fl_cmd_agent(int argc, char **argv);

#endif

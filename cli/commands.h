/* The subcommands of the murmur program. Each lives in its own cli/cmd_*.c
 * and takes the arguments after its name (argv[0] is the subcommand). They
 * return the process exit status: 0 success, 1 runtime failure, 2 usage. */
#ifndef MURMUR_COMMANDS_H
#define MURMUR_COMMANDS_H

int cmd_train(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_node(int argc, char **argv);
int cmd_topo(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_data_prepare(int argc, char **argv);
int cmd_data_verify(int argc, char **argv);
int cmd_data_info(int argc, char **argv);
int cmd_watch(int argc, char **argv);

#endif

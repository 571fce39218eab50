/*
 * commands.h - trace-replay's commands with options of their own: each takes
 * argv as main's, after the command's word, and returns the exit status.
 */
#ifndef RP_COMMANDS_H
#define RP_COMMANDS_H

int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_import(int argc, char **argv);

#endif

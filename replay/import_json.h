/*
 * import_json.h - `trace-replay import`: JSON lines (trace-dump --json's
 * schema, plus definition lines) back into a log.
 */
#ifndef RP_IMPORT_JSON_H
#define RP_IMPORT_JSON_H

int cmd_import(int argc, char **argv);

#endif

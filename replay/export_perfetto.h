/*
 * export_perfetto.h - `trace-replay export --perfetto OUT LOG`: the log as
 * Chrome trace-event JSON for the Perfetto UI and chrome://tracing.
 */
#ifndef RP_EXPORT_PERFETTO_H
#define RP_EXPORT_PERFETTO_H

int cmd_export(int argc, char **argv);

#endif

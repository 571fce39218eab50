/*
 * checkpoint.h - the replay's state kept beside a log's segments, so that a
 * check of what is left after segments were deleted goes on with the pool
 * models instead of partial history (FORMAT.md section 14, docs/follow.md).
 *
 * check --follow, having read every event so far, writes a checkpoint
 * for every later segment it reads: before the first event of segment k,
 * the replay's state after the event before it, S (operations being
 * gathered included: rp_replay_saveable), goes to `SEGMENT_K_PATH.ckpt`
 * (trace-1234.seg7.tlog.ckpt), a file in the log's own format: a HEADER
 * naming the log (its pid, start time and budget, segment k) and one
 * CHECKPOINT record.  Then it deletes the older ones: the state after S
 * holds the verdict on every event up to S, so the newest is all a later
 * check needs.  A check that meets a gap (events deleted with their
 * segments) takes the checkpoint of the first segment after the gap that
 * has one that loads, skips the events up to S and goes on from the state
 * as a replay that read every event would.  A log minimize wrote from such a state carries the
 * CHECKPOINT record itself, before its first event.
 *
 * Failure policy: writing a checkpoint can fail (disk full, directory
 * gone): the caller is told why and goes on without.  A checkpoint that
 * does not read, names another log, was written by another build or with
 * other options is not used, and why is said (rp_checkpoint_find's why).
 */
#ifndef RP_CHECKPOINT_H
#define RP_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "replay.h"
#include "trace_format.h"

/* The CHECKPOINT record's producer: who wrote the state and how to read it. */
#define RP_CHECKPOINT_PRODUCER "trace-replay replay-state"

/* Segment k's checkpoint file for the log whose first segment is log_path. */
int rp_checkpoint_path(char *out, size_t cap, const char *log_path, uint32_t segment);

/* Save rep's state (after event seq) as segment k's checkpoint of the log
 * with header h whose first segment is log_path: written to a temporary
 * name and renamed, so a reader never sees half of one.  0 and *bytes, or
 * -1 with err. */
int rp_checkpoint_write(const char *log_path, const tf_header *h, uint32_t segment, uint64_t seq,
                        const rp_replay *rep, size_t *bytes, char *err, size_t errlen);

/* Delete the checkpoints of segments 1 to below `below` (older than the
 * newest, or of deleted segments).  Returns how many it deleted. */
uint32_t rp_checkpoint_prune(const char *log_path, uint32_t below);

/* A checkpoint found for a gap. */
typedef struct rp_checkpoint {
    char path[4096];
    uint32_t segment;
    uint64_t seq;               /* the state is the replay's after this event */
    void *state;                /* the sealed state (malloc'd) */
    size_t len;
} rp_checkpoint;

/* The checkpoint to go on from after a gap that ended at event gap_seq, in
 * segment `segment` of the log (header h, first segment log_path): the
 * first of segments segment, segment + 1, ... (while their files are on
 * disk) whose checkpoint is of this log, at or after gap_seq, and opens
 * (rp_state_open).  1 with *c filled, 0 when none (why says what was
 * found and not used, "" when there was nothing). */
int rp_checkpoint_find(const char *log_path, const tf_header *h, uint32_t segment, uint64_t gap_seq,
                       rp_checkpoint *c, char *why, size_t whylen);
/* The CHECKPOINT record a log carries itself (minimize's reproducer): 1
 * with *c filled (path ""), 0 when it has none. */
int rp_checkpoint_in_log(const tf_reader *r, rp_checkpoint *c);
void rp_checkpoint_free(rp_checkpoint *c);

/* A replay made with o, loaded from c: NULL with err when the state does
 * not load (another build, other options). */
rp_replay *rp_checkpoint_start(const rp_checkpoint *c, const rp_options *o, char *err, size_t errlen);

#endif

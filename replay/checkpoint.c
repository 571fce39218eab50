/* checkpoint.c - the replay's state beside a log's segments (checkpoint.h). */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state.h"
#include "xalloc.h"

int rp_checkpoint_path(char *out, size_t cap, const char *log_path, uint32_t segment)
{
    char seg[4096];
    if (tf_segment_path(seg, sizeof seg, log_path, segment) < 0)
        return -1;
    int n = snprintf(out, cap, "%s.ckpt", seg);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int rp_checkpoint_write(const char *log_path, const tf_header *h, uint32_t segment, uint64_t seq,
                        const rp_replay *rep, size_t *bytes, char *err, size_t errlen)
{
    char path[4096], tmp[4200];
    if (rp_checkpoint_path(path, sizeof path, log_path, segment) < 0) {
        snprintf(err, errlen, "the checkpoint's path is too long");
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    rp_state_w payload = {0}, sealed = {0};
    rp_replay_save(rep, &payload);
    rp_state_seal(&payload, &sealed);
    rp_state_w_free(&payload);
    /* The log's header, as segment k's: a checkpoint names its log. */
    tf_header ch = *h;
    ch.segment = segment;
    ch.first_seq = seq + 1;
    tf_writer *w = tf_writer_new(&ch);
    tf_chunk chunk = {0};
    int rc = -ENOMEM;
    if (w) {
        tf_write_checkpoint(w, seq, RP_CHECKPOINT_PRODUCER, sealed.buf, sealed.len);
        tf_writer_seal(w, &chunk);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        rc = fd < 0 ? -errno : tf_chunk_write(fd, &chunk, NULL, 3);
        if (fd >= 0 && close(fd) < 0 && !rc)
            rc = -errno;
        if (!rc && rename(tmp, path) < 0)
            rc = -errno;
        if (rc)
            unlink(tmp);
    }
    if (!rc) {
        struct stat st;
        *bytes = stat(path, &st) == 0 ? (size_t)st.st_size : 0;
    }
    tf_chunk_free(&chunk);
    tf_writer_free(w);
    rp_state_w_free(&sealed);
    if (rc)
        snprintf(err, errlen, "%s: %s", path, strerror(-rc));
    return rc ? -1 : 0;
}

uint32_t rp_checkpoint_prune(const char *log_path, uint32_t below)
{
    uint32_t n = 0;
    for (uint32_t k = below; k-- > 1;) {
        char ckpt[4096];
        if (rp_checkpoint_path(ckpt, sizeof ckpt, log_path, k) == 0 && unlink(ckpt) == 0)
            n++;
    }
    return n;
}

/* The CHECKPOINT record of a reader, copied. */
static int take_record(const tf_reader *r, rp_checkpoint *c, char *why, size_t whylen)
{
    uint64_t seq;
    const char *producer;
    const void *state;
    size_t len;
    if (!tf_reader_checkpoint(r, &seq, &producer, &state, &len)) {
        snprintf(why, whylen, "it holds no checkpoint");
        return 0;
    }
    if (strcmp(producer, RP_CHECKPOINT_PRODUCER)) {
        snprintf(why, whylen, "a checkpoint of another program (%.100s)", producer);
        return 0;
    }
    rp_state_r st;
    char err[400];
    if (rp_state_open(state, len, &st, err, sizeof err) < 0) {
        snprintf(why, whylen, "%s", err);
        return 0;
    }
    c->seq = seq;
    c->state = rp_xmalloc(len ? len : 1);
    if (len)
        memcpy(c->state, state, len);
    c->len = len;
    return 1;
}

int rp_checkpoint_in_log(const tf_reader *r, rp_checkpoint *c)
{
    char why[512];
    memset(c, 0, sizeof *c);
    return take_record(r, c, why, sizeof why);
}

int rp_checkpoint_find(const char *log_path, const tf_header *h, uint32_t segment, uint64_t gap_seq,
                       rp_checkpoint *c, char *why, size_t whylen)
{
    memset(c, 0, sizeof *c);
    why[0] = '\0';
    for (uint32_t k = segment ? segment : 1;; k++) {
        char seg[4096], path[4096], err[512];
        struct stat sst;
        if (tf_segment_path(seg, sizeof seg, log_path, k) < 0 || stat(seg, &sst) < 0 ||
            rp_checkpoint_path(path, sizeof path, log_path, k) < 0)
            return 0;   /* past the last segment on disk */
        if (access(path, F_OK) < 0)
            continue;
        tf_reader *r = tf_reader_open(path, err, sizeof err);
        tf_event e;
        const tf_header *ch = r ? tf_reader_header(r) : NULL;
        while (r && tf_reader_next(r, &e))
            ;   /* a checkpoint holds no events: the record is read on the way */
        char not_used[600] = "";
        if (!r) {
            snprintf(not_used, sizeof not_used, "%s", err);
        } else if (ch->pid != h->pid || ch->wall_start_ns != h->wall_start_ns || ch->segment != k) {
            snprintf(not_used, sizeof not_used, "it is of another log (pid %u, segment %u)", ch->pid, ch->segment);
        } else if (take_record(r, c, not_used, sizeof not_used)) {
            if (c->seq + 1 >= gap_seq) {
                snprintf(c->path, sizeof c->path, "%s", path);
                c->segment = k;
                tf_reader_close(r);
                return 1;
            }
            snprintf(not_used, sizeof not_used, "its state is from before the gap (event %llu)",
                     (unsigned long long)c->seq);
            rp_checkpoint_free(c);
        }
        tf_reader_close(r);
        if (!why[0])   /* the first refusal says the most */
            snprintf(why, whylen, "checkpoint %s not used: %s", path, not_used);
    }
}

void rp_checkpoint_free(rp_checkpoint *c)
{
    free(c->state);
    c->state = NULL;
    c->len = 0;
}

rp_replay *rp_checkpoint_start(const rp_checkpoint *c, const rp_options *o, char *err, size_t errlen)
{
    rp_state_r st;
    rp_replay *r = rp_replay_new(o);
    if (rp_state_open(c->state, c->len, &st, err, errlen) < 0 || rp_replay_load(r, &st, err, errlen) < 0) {
        rp_replay_free(r);
        return NULL;
    }
    return r;
}

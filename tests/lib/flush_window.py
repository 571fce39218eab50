"""flush_window.py - what a kill -9 may not lose, judged by what the flusher
did rather than by the wall clock.

docs/guarantees.md: data reaches the file at least every 100 ms, and after
kill -9 the reader recovers everything older than the last 100 to 200 ms.
The thread that does it, `trace-flush`, sleeps on a futex for at most 100 ms
(woken early once 256 KiB wait), then seals everything recorded so far,
compresses it, writes it and sleeps again.  A test that counts 200 ms on the
wall clock before the kill fails whenever the machine leaves that thread
without a CPU for longer (seen at load 11-15 on 2 cores: 300 to 500 ms lost,
with the flusher runnable and waiting all along), or a recording thread that
holds the recorder's lock, or writes in the flusher's place once it is 1 MiB
behind, without one.  None of that breaks the promise.  What does is a flush
that leaves out what was recorded before it, or a flusher that sleeps on.
Both can be watched from /proc while the test waits to kill:

  * A cycle seen whole: the flusher asleep in its futex at one sample, asleep
    in it again at a later one, and scheduled onto a CPU in between
    (schedstat's third field grew): it woke, sealed, wrote and went back to
    sleep, so whatever was recorded before the first sample is in the file.
    due() names those records.
  * Its sleep: the longest time one sample after another found it asleep in
    its futex without it having run (the sleep lasted at least that long).
    The period is 100 ms; longest_sleep() is for the test to hold to a
    bound.

The flusher hands its file work to a helper, `trace-files`, and waits for
it in futex(2) as well: asleep there means nothing while the helper works
(the frame it writes was sealed before the sample; what was recorded since
is not in it).  So a sample says asleep only when the helper, where there
is one, was idle all along too: in futex(2), in state S, not run between a
schedstat read before the flusher's and one after.  A job handed over
wakes the helper before the flusher waits (pf_run), so a flusher waiting on
a job finds the helper running, runnable or in its write, never idle.

A sample reads the thread's schedstat, its syscall, its state and its
schedstat again, and says asleep only when the thread sat in futex(2) in
state S and did not run between the two schedstats.  Reading syscall needs
ptrace access to the process (its parent has it); without that or schedstat
(a kernel without CONFIG_SCHED_INFO) supported is False and nothing can be
judged by time.
"""
import os
import time

FLUSHER = "trace-flush"
# The flusher's helper (preload/private_files.c); named so as it starts,
# after a moment under the flusher's name.
HELPER = "trace-files"
SYS_FUTEX = {"x86_64": 202, "aarch64": 98}.get(os.uname().machine)


def _read(path):
    with open(path) as f:
        return f.read()


class Watch:
    def __init__(self, pid, every=0.005):
        self.pid, self.every = pid, every
        self.tid = None
        self.samples = []          # (monotonic ns, asleep, times scheduled in)
        self.supported = SYS_FUTEX is not None and os.path.exists(f"/proc/{pid}/schedstat")

    def _threads(self):
        """(tid, name) of the process's threads, by tid."""
        base = f"/proc/{self.pid}/task"
        found = []
        try:
            for tid in sorted(os.listdir(base), key=int):
                try:
                    found.append((tid, _read(f"{base}/{tid}/comm").strip()))
                except OSError:
                    pass
        except OSError:
            pass
        return found

    def _find(self):
        for tid, name in self._threads():
            if name == FLUSHER:
                self.tid = tid
                return

    def _look(self, tid):
        """Whether a thread of the process sits in futex(2) in state S;
        raises OSError when it is gone."""
        base = f"/proc/{self.pid}/task/{tid}"
        syscall = _read(f"{base}/syscall").split()
        state = _read(f"{base}/stat").rsplit(")", 1)[1].split()[0]
        return state == "S" and syscall[:1] == [str(SYS_FUTEX)]

    def _ran(self, tid):
        return int(_read(f"/proc/{self.pid}/task/{tid}/schedstat").split()[2])

    def _helpers(self):
        """The flusher's helpers: every other thread under its name or the
        helper's (one starting still wears the flusher's)."""
        return [tid for tid, name in self._threads()
                if tid != self.tid and name in (FLUSHER, HELPER)]

    def sample(self):
        """One look at the flusher; returns the time it was taken (before
        the look)."""
        now = time.monotonic_ns()
        if self.tid is None:
            self._find()
        if self.tid is None:
            return now
        try:
            helpers = [(tid, self._ran(tid)) for tid in self._helpers()]
            before = self._ran(self.tid)
            in_futex = self._look(self.tid)
            after = self._ran(self.tid)
            # A helper started meanwhile (the flusher waits for its start
            # in futex(2) too) is not idle.
            idle = (all(self._look(tid) and self._ran(tid) == ran for tid, ran in helpers)
                    and set(self._helpers()) <= {tid for tid, _ in helpers})
        except PermissionError:
            self.supported = False
            return now
        except (OSError, ValueError, IndexError):
            return now
        asleep = before == after and in_futex and idle
        self.samples.append((now, asleep, after))
        return now

    def watch(self, seconds, until=None, limit=60):
        """Looks every `every` s for `seconds`, then on until `until()` holds
        (at most `limit` s in all), then once more; returns the time of that
        last look: kill right after it."""
        start = time.monotonic_ns()
        end, give_up = start + int(seconds * 1e9), start + int(limit * 1e9)
        while True:
            now = self.sample()
            if now >= give_up or (now >= end and (until is None or until())):
                break
            time.sleep(self.every)
        return self.sample()

    def due(self, printed):
        """The keys of `printed` ((key, monotonic ns recorded) pairs) that a
        whole cycle followed: the log must hold them.  None when that cannot
        be known."""
        if not self.supported:
            return None
        # The earliest moment each whole cycle proves: the first sample of
        # the last one.
        last_proof, asleep_at = None, None
        for when, asleep, ran in self.samples:
            if not asleep:
                continue
            if asleep_at is not None and ran > asleep_at[1]:
                last_proof = asleep_at[0]
            asleep_at = (when, ran)
        if last_proof is None:
            return set()
        return {key for key, t in printed if t < last_proof}

    def longest_sleep(self):
        """ns of the longest stretch of samples that found the flusher asleep
        in its futex without it having run in between."""
        longest, start = 0, None
        for when, asleep, ran in self.samples:
            if not asleep:
                start = None
                continue
            if start is None or ran != start[1]:
                start = (when, ran)
            longest = max(longest, when - start[0])
        return longest

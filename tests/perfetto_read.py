"""Perfetto protobuf traces (trace-replay export --perfetto) decoded for the
tests, with no Perfetto library: tests/report and tests/replay use it."""


def read_perfetto(path):
    """A Perfetto protobuf trace decoded enough to check it (field numbers of
    perfetto/protos/perfetto/trace): events in order as dicts with ph B/E/i/C
    like the Chrome form, tid, ts, name, args (debug annotations) and, for
    events with a callstack, stack: its frames as text, bottom first."""
    def uv(b, i):
        v = sh = 0
        while True:
            c = b[i]
            i += 1
            v |= (c & 0x7F) << sh
            sh += 7
            if c < 0x80:
                return v, i

    def fields(b):
        i = 0
        while i < len(b):
            k, i = uv(b, i)
            f, w = k >> 3, k & 7
            if w == 0:
                v, i = uv(b, i)
            elif w == 2:
                n, i = uv(b, i)
                v, i = bytes(b[i:i + n]), i + n
            else:
                raise ValueError("wire type %d" % w)
            yield f, v

    def msg(b):
        out = {}
        for f, v in fields(b):
            out.setdefault(f, []).append(v)
        return out

    data = open(path, "rb").read()
    names, da_names, functions, frames, stacks = {}, {}, {}, {}, {}
    threads, counters, process, events = {}, {}, None, []
    for f, packet in fields(data):
        if f != 1:
            raise ValueError("a Trace holds packets only")
        p = msg(packet)
        for interned in p.get(12, []):
            d = msg(interned)
            for e in map(msg, d.get(2, [])):
                names[e[1][0]] = e[2][0].decode()
            for e in map(msg, d.get(3, [])):
                da_names[e[1][0]] = e[2][0].decode()
            for e in map(msg, d.get(5, [])):
                functions[e[1][0]] = e[2][0].decode()
            for e in map(msg, d.get(6, [])):
                frames[e[1][0]] = functions[e[2][0]]
            for e in map(msg, d.get(7, [])):
                packed, ids, i = e[2][0], [], 0
                while i < len(packed):
                    v, i = uv(packed, i)
                    ids.append(v)
                stacks[e[1][0]] = [frames[x] for x in ids]
        for td in map(msg, p.get(60, [])):
            if 4 in td:
                threads[td[1][0]] = msg(td[4][0])[2][0]
            if 3 in td:
                process = msg(td[3][0])[6][0].decode()
            if 8 in td:
                counters[td[1][0]] = td[2][0].decode()
        for te in map(msg, p.get(11, [])):
            ph = {1: "B", 2: "E", 3: "i", 4: "C"}[te[9][0]]
            track = te[11][0]
            e = {"ph": ph, "ts": p[8][0], "name": names.get(te.get(10, [0])[0])}
            if ph == "C":
                e.update(name=counters[track], value=te[30][0])
            else:
                e["tid"] = threads[track]
            args = {}
            for da in map(msg, te.get(4, [])):
                key = da_names[da[1][0]]
                args[key] = da[6][0].decode() if 6 in da else da.get(3, da.get(7, [None]))[0]
            e["args"] = args
            if 56 in te:
                e["stack"] = stacks[te[56][0]]
            events.append(e)
    return process, events

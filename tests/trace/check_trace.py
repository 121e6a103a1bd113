#!/usr/bin/env python3
"""check_trace.py LOG PREFIX NRANKS - checks the trace files PREFIX.R.json
and the OMPTARGET_MPI_INFO output in LOG (what run_mpi.sh printed) against
the operations the program listed as "# op KIND DEVICE BYTES STATUS [PEER]".

Checked: every file parses as JSON and is a Chrome trace (metadata names
each process and every thread a span uses; no span dropped); the host's
spans are exactly the operations (kind, device, bytes, status); each
worker's spans are exactly the operations sent to it (an exchange appears
on both workers, as sender and receiver), on its named serving threads;
the device map and the counter table at exit
match the operations. Prints one line per check, exits 1 on any failure.
"""
import json
import re
import sys
from collections import Counter

failures = 0


def check(cond, what):
    global failures
    print(("ok - " if cond else "not ok - ") + what)
    if not cond:
        failures += 1
    return cond


def read_ops(log):
    ops = []
    for m in re.finditer(r"^# op (\w+) (\d+) (\d+) (FINISHED|FAILED)(?: (\d+))?$", log, re.M):
        ops.append({"kind": m[1], "device": int(m[2]), "bytes": int(m[3]),
                    "status": m[4], "peer": int(m[5]) if m[5] else None})
    return ops


def spans_of(path, rank, nranks):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    check(isinstance(data, dict) and isinstance(data.get("traceEvents"), list),
          f"{path}: a JSON object with a traceEvents list")
    evs = data["traceEvents"]
    other = data.get("otherData", {})
    spans = [e for e in evs if e.get("ph") == "X"]
    threads = {e["tid"]: e["args"]["name"] for e in evs
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    procs = [e["args"]["name"] for e in evs
             if e.get("ph") == "M" and e.get("name") == "process_name"]
    want = "rank 0 (host)" if rank == 0 else f"rank {rank} (device {rank - 1})"
    check(procs == [want], f"rank {rank}: process named {want!r} ({procs})")
    check(other.get("rank") == rank and other.get("ranks") == nranks,
          f"rank {rank}: otherData names rank {rank} of {nranks}")
    check(other.get("dropped_spans") == 0 and other.get("spans") == len(spans),
          f"rank {rank}: {len(spans)} spans, none dropped ({other})")
    bad = [e for e in spans
           if e.get("pid") != rank or e.get("tid") not in threads
           or not isinstance(e.get("ts"), (int, float)) or e["ts"] < 0
           or not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0
           or e.get("name") != e.get("args", {}).get("kind")
           or not {"kind", "device", "bytes", "tag", "status"} <= set(e.get("args", {}))]
    check(not bad, f"rank {rank}: every span has pid {rank}, a named thread, "
          f"ts and dur >= 0 and the args kind/device/bytes/tag/status {bad[:2]}")
    failed = [e for e in spans if e["args"]["status"] == "FAILED" and not e["args"].get("error")]
    check(not failed, f"rank {rank}: every FAILED span says why {failed[:2]}")
    return spans, threads


def key(e, with_role=False):
    a = e["args"]
    k = (a["kind"], a["device"], a["bytes"], a["status"])
    return k + (a.get("role"),) if with_role else k


def check_host(spans, ops):
    got = Counter(key(e) for e in spans)
    want = Counter((o["kind"], o["device"], o["bytes"], o["status"]) for o in ops)
    check(got == want, f"host: spans match the {len(ops)} operations "
          f"(missing {dict(want - got)}, extra {dict(got - want)})")
    check(all(e["cat"] == "host" for e in spans), "host: every span is in category host")


def check_worker(rank, spans, threads, ops):
    dev = rank - 1
    want = Counter()
    for o in ops:
        if o["kind"] == "EXCHANGE":
            if o["device"] == dev:
                want[("EXCHANGE", dev, o["bytes"], o["status"], "send")] += 1
            if o["peer"] == dev:
                want[("EXCHANGE", dev, o["bytes"], o["status"], "receive")] += 1
        elif o["device"] == dev:
            want[(o["kind"], dev, o["bytes"], o["status"], None)] += 1
    got = Counter(key(e, True) for e in spans)
    check(got == want, f"rank {rank}: spans match the operations it served "
          f"(missing {dict(want - got)}, extra {dict(got - want)})")
    # The worker's threads take turns at the gate and run the kernels they
    # receive, so any of them may end any event; each is a named track.
    names = {threads[e["tid"]] for e in spans}
    check(all(n.startswith("server") for n in names),
          f"rank {rank}: spans on the worker's serving threads ({sorted(names)})")


KINDS = ["ALLOC", "DELETE", "SUBMIT", "RETRIEVE", "EXCHANGE", "EXECUTE", "LOAD", "EXIT"]


def check_counters(log, ops, ndev):
    lines = [l[len("omptarget-mpi: "):] for l in log.splitlines()
             if l.startswith("omptarget-mpi: ")]
    head = [i for i, l in enumerate(lines) if l.split()[:2] == ["device", "rank"]]
    if not check(len(head) == 1, "INFO: one counter table at exit"):
        return
    cols = lines[head[0]].split()
    check(cols == ["device", "rank"] + KINDS + ["failed", "bytes-to-device",
                                                "bytes-from-device", "bytes-to-peer",
                                                "kernel-ms"], f"INFO: the columns {cols}")
    rows = [l.split() for l in lines[head[0] + 1:head[0] + 1 + ndev]]
    widths = {len(l) for l in lines[head[0]:head[0] + 1 + ndev]}
    check(len(widths) == 1, "INFO: the table's lines are aligned (equal length)")
    for d in range(ndev):
        row = dict(zip(cols, rows[d])) if d < len(rows) else {}
        mine = [o for o in ops if o["device"] == d]
        ok = [o for o in mine if o["status"] == "FINISHED"]
        want = {"device": d, "rank": d + 1,
                "failed": sum(o["status"] == "FAILED" for o in mine),
                "bytes-to-device": sum(o["bytes"] for o in ok if o["kind"] == "SUBMIT"),
                "bytes-from-device": sum(o["bytes"] for o in ok if o["kind"] == "RETRIEVE"),
                "bytes-to-peer": sum(o["bytes"] for o in ok if o["kind"] == "EXCHANGE")}
        for k in KINDS:
            want[k] = sum(o["kind"] == k for o in mine)
        got = {k: int(row.get(k, -1)) for k in want}
        check(got == want, f"INFO: device {d} counters {got} == {want}")
        ms = float(row.get("kernel-ms", -1))
        check(ms > 0 if want["EXECUTE"] else ms == 0,
              f"INFO: device {d} kernel-ms {ms} is positive iff it ran kernels")
    for d in range(ndev):
        check(re.search(rf"^omptarget-mpi: device {d}: rank {d + 1} on \S+, pid \d+$",
                        log, re.M) is not None, f"INFO: device map names device {d}")


def main():
    log_path, prefix, nranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(log_path, encoding="utf-8", errors="replace") as f:
        log = f.read()
    ops = read_ops(log)
    check(len(ops) > 0, f"the program listed {len(ops)} operations")
    for r in range(nranks):
        path = f"{prefix}.{r}.json"
        try:
            spans, threads = spans_of(path, r, nranks)
        except (OSError, ValueError, KeyError, TypeError) as e:
            check(False, f"{path}: readable trace ({e})")
            continue
        if r == 0:
            check_host(spans, ops)
        else:
            check_worker(r, spans, threads, ops)
    check_counters(log, ops, nranks - 1)
    print(f"# check_trace: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

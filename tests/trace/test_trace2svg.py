#!/usr/bin/env python3
"""test_trace2svg.py SCRIPT - tools/trace2svg.py draws a small trace of two
ranks into well-formed SVG with one rectangle per span, merges the files,
and refuses input that is not a trace with a message and status 1."""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SCRIPT = sys.argv[1]
SVG = "{http://www.w3.org/2000/svg}"
failures = 0


def check(cond, what):
    global failures
    print(("ok - " if cond else "not ok - ") + what)
    failures += not cond


def meta(pid, tid, what, name):
    return {"ph": "M", "pid": pid, "tid": tid, "name": what, "args": {"name": name}}


def span(pid, tid, ts, dur, kind, status="FINISHED"):
    return {"ph": "X", "pid": pid, "tid": tid, "ts": ts, "dur": dur, "name": kind,
            "cat": "host" if pid == 0 else "device",
            "args": {"kind": kind, "device": 0, "bytes": 8, "tag": 3, "status": status}}


host = {"otherData": {"rank": 0, "dropped_spans": 0}, "traceEvents": [
    meta(0, 0, "process_name", "rank 0 (host)"), meta(0, 0, "thread_name", "main"),
    meta(0, 1, "thread_name", "thread 7 <&>"),
    span(0, 0, 0.0, 50.0, "SUBMIT"),
    span(0, 0, 10.0, 80.0, "EXECUTE"),        # overlaps: a second sub-row
    span(0, 0, 100.0, 20.0, "RETRIEVE", "FAILED"),
    span(0, 1, 5.0, 0.0, "ALLOC")]}           # zero length still drawn
worker = {"otherData": {"rank": 1, "dropped_spans": 2}, "traceEvents": [
    meta(1, 0, "process_name", "rank 1 (device 0)"), meta(1, 0, "thread_name", "gate"),
    meta(1, 1, "thread_name", "handler"),
    span(1, 0, 2.0, 30.0, "SUBMIT"), span(1, 1, 20.0, 60.0, "EXECUTE"),
    span(1, 0, 101.0, 10.0, "RETRIEVE", "FAILED")]}

with tempfile.TemporaryDirectory() as d:
    paths = []
    for i, t in enumerate((host, worker)):
        paths.append(os.path.join(d, f"t.{i}.json"))
        with open(paths[-1], "w") as f:
            json.dump(t, f)
    out, merged = os.path.join(d, "t.svg"), os.path.join(d, "all.json")
    r = subprocess.run([sys.executable, SCRIPT, "-o", out, "--merge", merged] + paths,
                       capture_output=True, text=True)
    check(r.returncode == 0, f"renders two files (status {r.returncode}, {r.stderr!r})")
    check("rank 1 dropped 2 spans" in r.stderr, "reports the dropped spans on stderr")
    root = ET.parse(out).getroot()          # raises if not well-formed XML
    check(root.tag == SVG + "svg", "the root is an svg element")
    rects = [e for e in root.iter(SVG + "rect") if e.get("class") == "span"]
    check(len(rects) == 7, f"one rectangle per span: {len(rects)} == 7")
    check(all(float(e.get("width")) >= 1 for e in rects), "every span at least 1 px wide")
    lanes = [e for e in root.iter(SVG + "rect") if e.get("class") == "lane"]
    check(len(lanes) == 4, f"one lane per rank and thread: {len(lanes)} == 4")
    texts = [e.text or "" for e in root.iter(SVG + "text")]
    check("rank 0 (host): thread 7 <&>" in texts, "lane names escaped and shown")
    legend = [e for e in root.iter(SVG + "rect") if e.get("class") == "legend"]
    check(len(legend) == 4, f"a legend entry per kind present: {len(legend)} == 4")
    # The host's main lane holds overlapping spans in two sub-rows.
    ys = {e.get("y") for e in rects if "EXECUTE" in e.find(SVG + "title").text
          or "SUBMIT" in e.find(SVG + "title").text}
    check(len(ys) >= 3, f"overlapping spans stacked in sub-rows ({sorted(ys)})")
    failed = [e for e in rects if e.get("stroke")]
    check(len(failed) == 2, f"FAILED spans outlined: {len(failed)} == 2")
    with open(merged) as f:
        m = json.load(f)
    check(len([e for e in m["traceEvents"] if e["ph"] == "X"]) == 7
          and m["otherData"]["dropped_spans"] == 2, "--merge keeps every span and the drops")

    bad = os.path.join(d, "bad.json")
    with open(bad, "w") as f:
        f.write("{\"traceEvents\": [")
    r = subprocess.run([sys.executable, SCRIPT, "-o", out, bad], capture_output=True, text=True)
    check(r.returncode == 1 and "trace2svg: " in r.stderr and "Traceback" not in r.stderr,
          f"a truncated file is refused with a message ({r.stderr.strip()!r})")
    with open(bad, "w") as f:
        json.dump({"traceEvents": [meta(0, 0, "process_name", "x")]}, f)
    r = subprocess.run([sys.executable, SCRIPT, bad], capture_output=True, text=True)
    check(r.returncode == 1 and "no spans" in r.stderr, "a trace without spans is refused")

print(f"# test_trace2svg: {failures} failed")
sys.exit(1 if failures else 0)

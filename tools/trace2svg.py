#!/usr/bin/env python3
"""trace2svg.py - draw omptarget-mpi traces (OMPTARGET_MPI_TRACE) as an SVG
timeline, and merge the per-rank files into one trace for Perfetto.

    tools/trace2svg.py [-o timeline.svg] [--merge all.json] PREFIX.*.json

Each rank writes PREFIX.RANK.json. This script reads any number of them
(or other Chrome trace-event JSON with complete "X" spans), draws one lane
per rank and thread (named by the "M" metadata records), spans coloured by
kind, a time axis and a legend. Spans that overlap on one thread (the
host's asynchronous operations) are stacked in sub-rows. --merge writes
every input's events into one JSON file, which Perfetto
(ui.perfetto.dev) or chrome://tracing opens as one timeline.

Python 3 standard library only; reads and writes local files only.
"""
import argparse
import json
import math
import sys
from xml.sax.saxutils import escape, quoteattr

# One colour per event kind; anything else is grey.
COLOURS = {
    "ALLOC": "#8dd3c7",
    "DELETE": "#bebada",
    "SUBMIT": "#1f78b4",
    "RETRIEVE": "#33a02c",
    "EXCHANGE": "#ff7f00",
    "EXECUTE": "#e31a1c",
    "SYNC": "#b15928",
    "EXIT": "#6a3d9a",
    "LOAD": "#fdbf6f",
}
OTHER = "#999999"

LABEL_W = 190       # left column with the lane names
ROW_H = 14          # one sub-row of spans
LANE_GAP = 6
TOP = 40            # title
AXIS_H = 30
LEGEND_H = 30


class TraceError(Exception):
    pass


def load(paths):
    """Every event of every file, and each file's otherData."""
    events, others = [], []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            raise TraceError(f"{path}: {e}") from e
        if isinstance(data, list):
            evs, other = data, {}
        elif isinstance(data, dict) and isinstance(data.get("traceEvents"), list):
            evs, other = data["traceEvents"], data.get("otherData", {})
        else:
            raise TraceError(f"{path}: not a trace (no traceEvents list)")
        events.extend(e for e in evs if isinstance(e, dict))
        others.append(other)
    return events, others


def lanes_of(events):
    """{(pid, tid): [span...]}, process names and thread names."""
    pnames, tnames, lanes = {}, {}, {}
    for e in events:
        ph, pid, tid = e.get("ph"), e.get("pid", 0), e.get("tid", 0)
        if ph == "M" and e.get("name") == "process_name":
            pnames[pid] = e.get("args", {}).get("name", f"pid {pid}")
        elif ph == "M" and e.get("name") == "thread_name":
            tnames[(pid, tid)] = e.get("args", {}).get("name", f"tid {tid}")
        elif ph == "X":
            try:
                ts, dur = float(e["ts"]), float(e.get("dur", 0))
            except (KeyError, TypeError, ValueError) as err:
                raise TraceError(f"span without a numeric ts/dur: {e}") from err
            lanes.setdefault((pid, tid), []).append((ts, max(dur, 0.0), e))
    return lanes, pnames, tnames


def pack(spans):
    """Assigns each span a sub-row so that spans in a row do not overlap."""
    ends, placed = [], []
    for ts, dur, e in sorted(spans, key=lambda s: (s[0], -s[1])):
        for row, end in enumerate(ends):
            if end <= ts:
                ends[row] = ts + dur
                break
        else:
            row = len(ends)
            ends.append(ts + dur)
        placed.append((row, ts, dur, e))
    return placed, max(len(ends), 1)


def nice_step(span_us, ticks=8):
    raw = span_us / ticks if span_us > 0 else 1.0
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def time_label(us):
    if us == 0:
        return "0"
    if us >= 1e6:
        return f"{us / 1e6:g} s"
    if us >= 1e3:
        return f"{us / 1e3:g} ms"
    return f"{us:g} us"


def tooltip(e, dur):
    a = e.get("args", {})
    parts = [str(e.get("name", "?")), f"{time_label(round(dur, 3))}"]
    for key in ("device", "bytes", "tag", "status", "error", "role", "queued_us"):
        if key in a:
            parts.append(f"{key} {a[key]}")
    return ", ".join(parts)


def render(events, width=1200, title="omptarget-mpi trace"):
    lanes, pnames, tnames = lanes_of(events)
    if not lanes:
        raise TraceError("no spans (\"ph\":\"X\") in the trace")
    t0 = min(ts for spans in lanes.values() for ts, _, _ in spans)
    t1 = max(ts + d for spans in lanes.values() for ts, d, _ in spans)
    total = max(t1 - t0, 1e-3)
    plot_w = width - LABEL_W - 20
    scale = plot_w / total

    def x(ts):
        return LABEL_W + (ts - t0) * scale

    out, y = [], TOP
    kinds = set()
    body = []
    for key in sorted(lanes):
        pid, tid = key
        placed, rows = pack(lanes[key])
        lane_h = rows * ROW_H
        label = f"{pnames.get(pid, f'pid {pid}')}: {tnames.get(key, f'tid {tid}')}"
        body.append(f'<rect class="lane" x="0" y="{y - 2}" width="{width}" '
                    f'height="{lane_h + 4}" fill="#f4f4f4"/>')
        body.append(f'<text x="6" y="{y + min(lane_h, ROW_H) - 3}" '
                    f'font-size="11">{escape(label)}</text>')
        for row, ts, dur, e in placed:
            kind = str(e.get("name", "?"))
            kinds.add(kind)
            failed = e.get("args", {}).get("status") == "FAILED"
            stroke = ' stroke="#000" stroke-width="1.5"' if failed else ""
            body.append(
                f'<rect class="span" x="{x(ts):.2f}" y="{y + row * ROW_H + 1}" '
                f'width="{max(dur * scale, 1.0):.2f}" height="{ROW_H - 2}" '
                f'fill="{COLOURS.get(kind, OTHER)}"{stroke}>'
                f'<title>{escape(tooltip(e, dur))}</title></rect>')
        y += lane_h + LANE_GAP
    # Time axis under the lanes.
    axis_y = y + 4
    body.append(f'<line x1="{LABEL_W}" y1="{axis_y}" x2="{LABEL_W + plot_w}" '
                f'y2="{axis_y}" stroke="#333"/>')
    step = nice_step(total)
    k = 0
    while k * step <= total + 1e-9:
        tx = LABEL_W + k * step * scale
        body.append(f'<line x1="{tx:.2f}" y1="{axis_y}" x2="{tx:.2f}" '
                    f'y2="{axis_y + 5}" stroke="#333"/>')
        body.append(f'<text x="{tx:.2f}" y="{axis_y + 17}" font-size="10" '
                    f'text-anchor="middle">{escape(time_label(round(k * step, 6)))}</text>')
        k += 1
    body.append(f'<text x="{LABEL_W - 6}" y="{axis_y + 17}" font-size="10" '
                f'text-anchor="end">since the first span</text>')
    # Legend: the kinds present, then what a black outline means.
    ly = axis_y + AXIS_H
    lx = LABEL_W
    for kind in sorted(kinds):
        body.append(f'<rect class="legend" x="{lx}" y="{ly}" width="12" height="12" '
                    f'fill="{COLOURS.get(kind, OTHER)}"/>')
        body.append(f'<text x="{lx + 16}" y="{ly + 10}" font-size="11">{escape(kind)}</text>')
        lx += 24 + 8 * len(kind)
    body.append(f'<text x="{lx}" y="{ly + 10}" font-size="11">'
                f'(black outline: FAILED)</text>')
    height = ly + LEGEND_H
    out.append('<?xml version="1.0" encoding="UTF-8"?>')
    out.append(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
               f'height="{height}" viewBox="0 0 {width} {height}" '
               f'font-family="sans-serif">')
    out.append(f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fff"/>')
    out.append(f'<text x="6" y="20" font-size="14" font-weight="bold">'
               f'{escape(title)}</text>')
    out.append(f'<text x="{width - 6}" y="20" font-size="11" text-anchor="end">'
               f'{sum(len(s) for s in lanes.values())} spans over '
               f'{escape(time_label(round(total, 3)))}</text>')
    out.extend(body)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def merge(events, others):
    dropped = sum(int(o.get("dropped_spans", 0)) for o in others)
    return {"displayTimeUnit": "ms",
            "otherData": {"ranks": others, "dropped_spans": dropped},
            "traceEvents": events}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="+", help="trace files (PREFIX.RANK.json)")
    ap.add_argument("-o", "--output", help="SVG file to write (default: none "
                    "with --merge, else stdout)")
    ap.add_argument("--merge", metavar="JSON", help="also write all inputs as one trace")
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--title", default="omptarget-mpi trace")
    args = ap.parse_args(argv)
    try:
        events, others = load(args.traces)
        if args.merge:
            with open(args.merge, "w", encoding="utf-8") as f:
                json.dump(merge(events, others), f)
        if args.output or not args.merge:
            svg = render(events, width=max(args.width, 400), title=args.title)
            if args.output:
                with open(args.output, "w", encoding="utf-8") as f:
                    f.write(svg)
            else:
                sys.stdout.write(svg)
    except (TraceError, OSError) as e:
        print(f"trace2svg: {e}", file=sys.stderr)
        return 1
    for o in others:
        if int(o.get("dropped_spans", 0)):
            print(f"trace2svg: rank {o.get('rank', '?')} dropped "
                  f"{o['dropped_spans']} spans (its trace was full)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

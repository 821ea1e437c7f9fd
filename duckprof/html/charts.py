"""SVG charts for `duckprof html`, drawn on the server: each function turns a
report's rows into a Chart, a list of SVG primitives (rect, circle, line,
path, text) with a title that says what question the chart answers and axis
labels with units. templates/chart.html.j2 writes them out with Jinja's
autoescaping, so a name is always text. Every data mark (one bar, one dot,
one line per series) has the class "mark": the browser tests count them.

No number is computed here that a report does not give: only positions,
axis ticks and labels.

Colours: the Okabe-Ito palette (readable with the common colour-vision
deficiencies); the state colours are fixed, so busy is the same blue and
host wait the same vermillion in every chart and the timeline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..render import human_time

# Okabe & Ito (2008), "Color Universal Design"
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
STATE = {"busy": "#0072B2", "compute": "#0072B2", "host_wait": "#D55E00", "kernel_wait": "#E69F00",
         "other": "#BBBBBB", "idle": "#BBBBBB", "communication": "#CC79A7", "memory": "#009E73",
         "highlight": "#D55E00", "normal": "#0072B2", "slower": "#D55E00", "faster": "#0072B2",
         "total": "#777777"}

FONT = 11          # px, axis text
LABEL_W = 230      # px, the label column of horizontal bar charts
WIDTH = 860        # px, every chart's viewBox width


@dataclass
class Chart:
    kind: str
    title: str                       # the question it answers
    width: int
    height: int
    items: list = field(default_factory=list)
    legend: list = field(default_factory=list)   # [(label, colour)]
    note: str = ""                   # one line under the chart

    def marks(self) -> int:
        return sum(1 for i in self.items if "mark" in i.get("cls", "").split())


# -- numbers on axes -----------------------------------------------------------------

def nice_ticks(hi: float, n: int = 5) -> list[float]:
    """0 and round steps up to at least hi (1, 2 or 5 times a power of ten)."""
    if not hi or hi <= 0 or not math.isfinite(hi):
        return [0.0, 1.0]
    raw = hi / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    k = math.ceil(hi / step - 1e-9)
    return [i * step for i in range(k + 1)]


def range_ticks(lo: float, hi: float, n: int = 8) -> list[float]:
    """Round steps inside [lo, hi] (for an axis that does not start at 0)."""
    if not hi > lo:
        return [lo]
    step = nice_ticks(hi - lo, n)[1]
    first = math.ceil(lo / step - 1e-9) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def time_unit(max_us: float) -> tuple[str, float]:
    """The unit to show µs values in on an axis: (label, divisor)."""
    if max_us >= 1e6:
        return "s", 1e6
    if max_us >= 1e3:
        return "ms", 1e3
    return "µs", 1.0


def fmt_num(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.0f}" if float(v).is_integer() else f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}".rstrip("0").rstrip(".")
    return f"{v:.3g}"


def us_text(us) -> str:
    return "" if us is None else human_time(float(us) * 1e3)


def pct_text(p) -> str:
    return "" if p is None else f"{p:.1f}%"


#: characters of a bar's label that fit in LABEL_W (10.5 px monospace: ~6.4 px each)
LABEL_CHARS = (LABEL_W - 10) // 6.4


def short(s, n: int = int(LABEL_CHARS)) -> str:
    s = "" if s is None else str(s)
    if s.startswith("void "):
        s = s[5:]
    return s if len(s) <= n else s[: n - 1] + "…"


def _text(x, y, s, cls="axis", anchor="start", **kw):
    return dict(t="text", x=round(x, 1), y=round(y, 1), s=s, cls=cls, anchor=anchor, **kw)


def _rect(x, y, w, h, cls, fill=None, tip=None):
    return dict(t="rect", x=round(x, 2), y=round(y, 2), w=round(max(w, 0), 2), h=round(max(h, 0), 2),
                cls=cls, fill=fill, tip=tip)


def _line(x1, y1, x2, y2, cls="grid", stroke=None, dash=False):
    return dict(t="line", x1=round(x1, 2), y1=round(y1, 2), x2=round(x2, 2), y2=round(y2, 2),
                cls=cls, stroke=stroke, dash=dash)


def _axis(items, vertical: bool, a0, a1, at, ticks, scale, label, fmt=fmt_num, grid_to=None):
    """An axis from a0 to a1 along x (or y when vertical) at `at` on the
    other one: its line, a label per tick (and a grid line to grid_to), and
    its title (rotated on a vertical axis)."""
    items.append(_line(at, a0, at, a1, cls="axis-line") if vertical else _line(a0, at, a1, at, cls="axis-line"))
    for t in ticks:
        p = scale(t)
        if grid_to is not None:
            items.append(_line(at, p, grid_to, p, cls="grid") if vertical else _line(p, grid_to, p, at, cls="grid"))
        items.append(_text(at - 5, p + 4, fmt(t), anchor="end") if vertical else
                     _text(p, at + 14, fmt(t), anchor="middle"))
    mid = (a0 + a1) / 2
    items.append(_text(14, mid, label, cls="axis-label", anchor="middle", rotate=True) if vertical else
                 _text(mid, at + 30, label, cls="axis-label", anchor="middle"))


def _x_axis(items, x0, x1, y, ticks, scale, label, fmt=fmt_num, grid_top=None):
    _axis(items, False, x0, x1, y, ticks, scale, label, fmt, grid_top)


def _y_axis(items, x, y0, y1, ticks, scale, label, fmt=fmt_num, grid_right=None):
    _axis(items, True, y0, y1, x, ticks, scale, label, fmt, grid_right)


# -- horizontal bars -------------------------------------------------------------------

def _bar_frame(n, hi, bar_h, gap, top, plot_x1, axis):
    """The x axis under n bars from LABEL_W to plot_x1 (values 0 to hi, with its
    grid): the items so far, the scale (value -> x) and the bars' bottom."""
    ticks = nice_ticks(hi)
    span = ticks[-1] or 1

    def scale(v):
        return LABEL_W + (plot_x1 - LABEL_W) * v / span

    items = []
    bottom = top + n * (bar_h + gap)
    _x_axis(items, LABEL_W, plot_x1, bottom + 4, ticks, scale, axis, grid_top=top)
    return items, scale, bottom


def hbars(rows, *, title, axis, value_text, label, value, tip=None, highlight=None,
          unit_div: float = 1.0, colour: str | None = None, note: str = "") -> Chart:
    """One bar per row: label(row) on the left, value(row) as the bar (in axis
    units after dividing by unit_div), value_text(row) at its end; highlight(row)
    True paints it vermillion."""
    rows = [r for r in rows if value(r) is not None]
    bar_h, gap, top = 16, 5, 8
    plot_x0 = LABEL_W
    # room on the right for the longest value text (10.5 px: ~6 px a character)
    right = max(80, 10 + 6 * max((len(str(value_text(r))) for r in rows), default=0))
    items, scale, bottom = _bar_frame(len(rows), max((value(r) / unit_div for r in rows), default=0),
                                      bar_h, gap, top, WIDTH - min(right, 300), axis)
    y = top
    for r in rows:
        v = value(r) / unit_div
        hot = bool(highlight and highlight(r))
        fill = STATE["highlight"] if hot else (colour or STATE["normal"])
        items.append(_text(plot_x0 - 6, y + bar_h - 4, short(label(r)), cls="label", anchor="end",
                           tip=str(label(r))))
        items.append(_rect(plot_x0, y, scale(v) - plot_x0, bar_h, "mark bar" + (" hot" if hot else ""), fill,
                           tip=f"{label(r)}: {value_text(r)}" + (f" ({tip(r)})" if tip else "")))
        items.append(_text(scale(v) + 4, y + bar_h - 4, value_text(r), cls="value"))
        y += bar_h + gap
    return Chart("hbars", title, WIDTH, int(bottom + 44), items, note=note)


def stacked_hbars(rows, segments, *, title, axis, label, unit_div: float = 1.0, total_text=None,
                  note: str = "") -> Chart:
    """One bar per row, split into segments: [(key, legend label, colour)];
    each row's value for a key is row[key] (axis units after unit_div).
    One mark per non-zero segment."""
    bar_h, gap, top = 18, 6, 8
    plot_x0 = LABEL_W
    totals = [sum((r.get(k) or 0) for k, _, _ in segments) / unit_div for r in rows]
    items, scale, bottom = _bar_frame(len(rows), max(totals, default=0), bar_h, gap, top, WIDTH - 90, axis)
    y = top
    for r, tot in zip(rows, totals):
        items.append(_text(plot_x0 - 6, y + bar_h - 5, short(label(r)), cls="label", anchor="end", tip=str(label(r))))
        acc = 0.0
        for key, name, colour in segments:
            v = (r.get(key) or 0) / unit_div
            if v <= 0:
                continue
            items.append(_rect(scale(acc), y, scale(acc + v) - scale(acc), bar_h, f"mark seg seg-{key}", colour,
                               tip=f"{label(r)}: {name} {fmt_num(v)} {axis_unit(axis)}".rstrip()))
            acc += v
        if total_text:
            items.append(_text(scale(tot) + 4, y + bar_h - 5, total_text(r), cls="value"))
        y += bar_h + gap
    return Chart("stacked", title, WIDTH, int(bottom + 44), items, legend=[(n, c) for _, n, c in segments], note=note)


def axis_unit(axis: str) -> str:
    """'GPU time (ms)' -> 'ms'."""
    return axis[axis.rfind("(") + 1: -1] if axis.endswith(")") and "(" in axis else ""


# -- columns over steps -------------------------------------------------------------

def step_columns(rows, *, title, x_label, y_label, x, total, part=None, highlight=None,
                 unit_div: float = 1.0, part_name="busy", rest_name="idle", note: str = "") -> Chart:
    """One column per row (a step): its height total(row), the lower part
    part(row) in blue and the rest grey; highlight(row) outlines the column
    in vermillion. x(row) labels the column."""
    top, bottom, left, right = 10, 46, 64, WIDTH - 16
    h = 230
    n = len(rows)
    hi = max(((total(r) or 0) / unit_div for r in rows), default=0)
    ticks = nice_ticks(hi)
    span = ticks[-1] or 1
    ys = lambda v: top + h - h * v / span  # noqa: E731
    slot = (right - left) / max(n, 1)
    bw = min(max(slot * 0.8, 0.6), 48)
    items = []
    _y_axis(items, left, top, top + h, ticks, ys, y_label, grid_right=right)
    every = max(1, math.ceil(n / 16))
    for i, r in enumerate(rows):
        x0 = left + i * slot + (slot - bw) / 2
        tot = (total(r) or 0) / unit_div
        hot = bool(highlight and highlight(r))
        tip = f"{x_label} {x(r)}: {fmt_num(tot)} {axis_unit(y_label)}"
        if part is not None:
            p = min((part(r) or 0) / unit_div, tot)
            tip += f", {part_name} {fmt_num(p)}"
            items.append(_rect(x0, ys(tot), bw, ys(p) - ys(tot), "rest", STATE["idle"]))
            items.append(_rect(x0, ys(p), bw, top + h - ys(p), "part", STATE["busy"]))
        items.append(_rect(x0, ys(tot), bw, top + h - ys(tot),
                           "mark col" + (" hot" if hot else ""), "none" if part is not None else STATE["normal"],
                           tip=tip))
        if i % every == 0 or hot:
            items.append(_text(x0 + bw / 2, top + h + 14, str(x(r)), anchor="middle",
                               cls="axis hot-label" if hot else "axis"))
    items.append(_line(left, top + h, right, top + h, cls="axis-line"))
    items.append(_text((left + right) / 2, top + h + 32, x_label, cls="axis-label", anchor="middle"))
    legend = [(part_name, STATE["busy"]), (rest_name, STATE["idle"])] if part is not None else []
    if highlight:
        legend.append(("outlier", STATE["highlight"]))
    return Chart("columns", title, WIDTH, top + h + bottom, items, legend=legend, note=note)


# -- a grid of steps: one row per rank (device) ---------------------------------------

#: light to dark, one hue (readable in grey and with every colour-vision deficiency)
RAMP = ["#deebf7", "#9ecae1", "#6baed6", "#3182bd", "#08519c"]


def _ramp(v: float, lo: float, hi: float) -> str:
    f = 0.0 if hi <= lo else (v - lo) / (hi - lo)
    return RAMP[min(len(RAMP) - 1, int(f * len(RAMP)))]


def step_grid(series, *, title, x_label, unit, unit_div: float = 1.0, note: str = "") -> Chart:
    """Steps of many ranks at once: one row per series (dict: label, cells
    [(step, value, tip, hot)]), one cell per step, its colour the value (a
    step time) on one scale for the whole grid, in five shades; a hot cell is
    outlined in vermillion. Rows shrink to fit 64+ ranks in ~400 px; when
    they are too thin for a label each, every k-th is labelled."""
    left, right, top, bottom = LABEL_W, WIDTH - 16, 10, 46
    steps = sorted({c[0] for s in series for c in s["cells"]})
    col = {st: i for i, st in enumerate(steps)}
    n = max(len(series), 1)
    row_h = max(4.0, min(18.0, 400 / n))
    h = row_h * n
    slot = (right - left) / max(len(steps), 1)
    values = [c[1] / unit_div for s in series for c in s["cells"] if c[1] is not None]
    lo, hi = (min(values), max(values)) if values else (0, 0)
    items = []
    every = max(1, math.ceil(12 / row_h))
    for k, s in enumerate(series):
        y = top + k * row_h
        if k % every == 0 or any(c[3] for c in s["cells"]) and row_h >= 9:
            items.append(_text(left - 6, y + row_h / 2 + 4, short(s["label"]), anchor="end"))
        for st, v, tip, hot in s["cells"]:
            if v is None:
                continue
            items.append(_rect(left + col[st] * slot + 0.5, y + 0.5, slot - 1 if slot > 3 else slot, row_h - 1,
                               "mark cell" + (" hot" if hot else ""), _ramp(v / unit_div, lo, hi), tip=tip))
    every_x = max(1, math.ceil(len(steps) / 16))
    for i, st in enumerate(steps):
        if i % every_x == 0:
            items.append(_text(left + (i + 0.5) * slot, top + h + 14, str(st), anchor="middle"))
    items.append(_text((left + right) / 2, top + h + 32, x_label, cls="axis-label", anchor="middle"))
    legend = []
    if values:
        bounds = [lo + (hi - lo) * i / len(RAMP) for i in range(len(RAMP) + 1)]
        legend = [(f"{fmt_num(a)}–{fmt_num(b)} {unit}", c) for a, b, c in zip(bounds, bounds[1:], RAMP)]
        if any(c[3] for s in series for c in s["cells"]):
            legend.append(("outlier step", STATE["highlight"]))
    return Chart("grid", title, WIDTH, round(top + h + bottom), items, legend=legend, note=note)


# -- roofline -------------------------------------------------------------------------

def _decades(lo: float, hi: float) -> list[float]:
    return [10.0 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]


#: the roofline's dots that get a number (the most time first) and a line in its key
ROOF_LABELS = 10
KEY_LINE = 15      # px, a line of the roofline's key
DIGIT_W = 6.5      # px, a digit of a dot's number (10.5 px bold)


def _free_spot(cx, cy, r, w, taken, box):
    """Where a dot's number goes: the first of right, upper right, left,
    above, below, lower right that overlaps no number placed yet and stays
    in the plot, else the one that overlaps least. Boxes: (x0, y0, x1, y1)."""
    h = FONT
    spots = [(cx + r + 1, cy + h / 2 - 1), (cx + r * .7, cy - r * .7 - 1), (cx - r - 1 - w, cy + h / 2 - 1),
             (cx - w / 2, cy - r - 2), (cx - w / 2, cy + r + h), (cx + r * .7, cy + r * .7 + h)]

    def overlap(b):
        return sum(max(0, min(b[2], t[2]) - max(b[0], t[0])) * max(0, min(b[3], t[3]) - max(b[1], t[1]))
                   for t in taken)
    best = None
    for x, y in spots:
        b = (x, y - h + 2, x + w, y + 1)
        if b[0] < box[0] or b[2] > box[2] or b[1] < box[1] or b[3] > box[3]:
            continue
        score = overlap(b)
        if best is None or score < best[0]:
            best = (score, x, y, b)
        if score == 0:
            break
    if best is None:
        x, y = spots[0]
        best = (0, x, y, (x, y - h + 2, x + w, y + 1))
    taken.append(best[3])
    return best[1], best[2]


def roofline(points, *, title, gbps, peaks, note: str = "") -> Chart:
    """Log-log: x = arithmetic intensity (FLOP/byte), y = achieved TFLOP/s, one
    dot per point (dict: x, y, size_us, label, tip), its area proportional to
    size_us. Roofs: the memory roof y = x * gbps / 1000 up to each compute
    peak [(label, tflops)], flat after its ridge point. The ROOF_LABELS
    points with the most time are numbered 1, 2, ... (placed where they hide
    no other number) and named in a key under the plot; every dot has its
    kernel's name and figures as a hover title."""
    left, right, top, bottom = 70, WIDTH - 150, 12, 50
    h = 330
    xs = [p["x"] for p in points] + [t * 1e3 / gbps for _, t in peaks if gbps]
    ys = [p["y"] for p in points] + [t for _, t in peaks]
    xs = [v for v in xs if v and v > 0]
    ys = [v for v in ys if v and v > 0]
    x_lo, x_hi = (min(xs) / 3, max(xs) * 3) if xs else (0.1, 1000)
    y_lo, y_hi = (min(ys) / 3, max(ys) * 2) if ys else (0.01, 100)
    xd, yd = _decades(x_lo, x_hi), _decades(y_lo, y_hi)
    lx0, lx1, ly0, ly1 = math.log10(xd[0]), math.log10(xd[-1]), math.log10(yd[0]), math.log10(yd[-1])
    sx = lambda v: left + (right - left) * (math.log10(v) - lx0) / ((lx1 - lx0) or 1)  # noqa: E731
    sy = lambda v: top + h - h * (math.log10(v) - ly0) / ((ly1 - ly0) or 1)  # noqa: E731
    items = []
    _x_axis(items, left, right, top + h, xd, sx, "arithmetic intensity (FLOP/byte, log scale)",
            fmt=fmt_num, grid_top=top)
    _y_axis(items, left, top, top + h, yd, sy, "achieved (TFLOP/s, log scale)", fmt=fmt_num, grid_right=right)
    for i, (name, tflops) in enumerate(sorted(peaks, key=lambda p: -p[1])):
        if gbps:
            ridge = tflops * 1e3 / gbps
            x_start = max(xd[0], yd[0] * 1e3 / gbps)
            items.append(_line(sx(x_start), sy(x_start * gbps / 1e3), sx(ridge), sy(tflops), cls="roof",
                               stroke=STATE["total"]))
        else:
            ridge = xd[0]
        items.append(_line(sx(ridge), sy(tflops), sx(xd[-1]), sy(tflops), cls="roof", stroke=STATE["total"],
                           dash=i > 0))
        items.append(_text(right + 4, sy(tflops) + 4, f"{name} {fmt_num(tflops)} TFLOP/s", cls="roof-label"))
    if gbps and peaks:
        x_lab = max(xd[0], yd[0] * 1e3 / gbps) * 1.6
        items.append(_text(sx(x_lab) + 4, sy(x_lab * gbps / 1e3) - 8, f"DRAM {fmt_num(gbps)} GB/s",
                           cls="roof-label"))
    biggest = max((p["size_us"] or 0 for p in points), default=0) or 1
    ranked = sorted(points, key=lambda p: -(p["size_us"] or 0))
    named = [p for p in ranked if p.get("label")][:ROOF_LABELS]
    number = {id(p): k for k, p in enumerate(named, start=1)}
    numbers, taken = [], []
    for p in ranked:  # the biggest first, so the small dots are drawn on top
        r = 3 + 11 * math.sqrt((p["size_us"] or 0) / biggest)
        cx, cy = sx(p["x"]), sy(p["y"])
        items.append(dict(t="circle", cx=round(cx, 2), cy=round(cy, 2), r=round(r, 2),
                          cls="mark dot", fill=PALETTE[0] if p.get("bound") != "compute" else PALETTE[1],
                          tip=p["tip"]))
        if id(p) in number:
            n = str(number[id(p)])
            x, y = _free_spot(cx, cy, r, DIGIT_W * len(n), taken, (left, top, right + 140, top + h))
            numbers.append(_text(x, y, n, cls="dot-label", tip=p["tip"]))
    items.extend(numbers)  # above every dot
    key_top = top + h + bottom
    half = (len(named) + 1) // 2
    col_w = (WIDTH - left) / 2
    for k, p in enumerate(named):
        x = left + (k // half) * col_w if half else left
        y = key_top + (k % half) * KEY_LINE + FONT if half else key_top
        items.append(_text(x, y, str(k + 1), cls="dot-label key", anchor="start"))
        items.append(_text(x + 22, y, short(p["label"], int((col_w - 30) / 6.4)), cls="axis key", tip=p["tip"]))
    height = top + h + bottom + (half * KEY_LINE + 6 if named else 0)
    legend = [("memory-bound kernel", PALETTE[0]), ("compute-bound kernel", PALETTE[1]),
              ("roofs: DRAM and compute peaks", STATE["total"])]
    return Chart("roofline", title, WIDTH, height, items, legend=legend, note=note)


# -- lines over time ------------------------------------------------------------------

def step_lines(series, *, title, x_label, y_label, note: str = "") -> Chart:
    """One step line per series (dict: label, points [(x0, x1, y)] in axis
    units): e.g. the mean queue depth per bucket of each stream."""
    left, right, top, bottom = 64, WIDTH - 16, 10, 46
    h = 200
    x_lo = min((p[0] for s in series for p in s["points"]), default=0)
    x_hi = max((p[1] for s in series for p in s["points"]), default=1)
    y_hi = max((p[2] or 0 for s in series for p in s["points"]), default=0)
    yt = nice_ticks(y_hi)
    xt = [t for t in range_ticks(x_lo, x_hi)]
    sx = lambda v: left + (right - left) * (v - x_lo) / ((x_hi - x_lo) or 1)  # noqa: E731
    sy = lambda v: top + h - h * v / (yt[-1] or 1)  # noqa: E731
    items = []
    _y_axis(items, left, top, top + h, yt, sy, y_label, grid_right=right)
    _x_axis(items, left, right, top + h, xt, sx, x_label)
    legend = []
    for i, s in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        d = []
        for x0, x1, y in s["points"]:
            y = y or 0
            d.append(f"{'M' if not d else 'L'}{sx(x0):.1f},{sy(y):.1f}")
            d.append(f"L{sx(x1):.1f},{sy(y):.1f}")
        items.append(dict(t="path", d=" ".join(d), cls="mark line", stroke=colour, tip=s["label"]))
        legend.append((s["label"], colour))
    return Chart("lines", title, WIDTH, top + h + bottom, items, legend=legend, note=note)


# -- waterfall ----------------------------------------------------------------------------

def waterfall(steps, *, title, axis, start, end, unit_div: float = 1.0, note: str = "") -> Chart:
    """A's total, then one floating bar per (label, delta) (vermillion: slower,
    blue: faster), then B's total; start and end are (label, value)."""
    top, bottom, left, right = 10, 120, 64, WIDTH - 16
    h = 240
    levels = [start[1] / unit_div]
    for _, d in steps:
        levels.append(levels[-1] + (d or 0) / unit_div)
    every = levels + [end[1] / unit_div]
    lo, hi = min(every + [0.0]), max(every)
    moved = max(every) - min(every)
    if min(every) > 0 and 0 < moved < 0.25 * hi:
        # small changes on large totals: the axis starts near the lowest level
        # (said in the note), or the changes would be a pixel high
        lo = max(0.0, min(every) - max(moved, 0.02 * hi))
        ticks = range_ticks(lo, hi + 0.05 * (hi - lo), n=5)
        lo = min(lo, ticks[0])
        note = (note + "; " if note else "") + f"the axis starts at {fmt_num(lo)}, not 0"
    else:
        ticks = nice_ticks(hi)
    top_v = max(ticks[-1], hi + 0.06 * (hi - lo))
    ys = lambda v: top + h - h * (v - lo) / ((top_v - lo) or 1)  # noqa: E731
    n = len(steps) + 2
    slot = (right - left) / n
    bw = slot * 0.7
    items = []
    _y_axis(items, left, top, top + h, ticks, ys, axis, grid_right=right)

    def bar(i, a, b, cls, fill, name, tip):
        x0 = left + i * slot + (slot - bw) / 2
        items.append(_rect(x0, ys(max(a, b)), bw, abs(ys(a) - ys(b)) or 1, cls, fill, tip=tip))
        items.append(dict(t="text", x=round(x0 + bw / 2, 1), y=top + h + 10, s=short(name, 22), cls="axis",
                          anchor="end", rotate_at=True, tip=name))

    bar(0, lo, levels[0], "mark total", STATE["total"], start[0],
        f"{start[0]}: {fmt_num(levels[0])} {axis_unit(axis)}")
    for i, (name, d) in enumerate(steps, start=1):
        d = (d or 0) / unit_div
        bar(i, levels[i - 1], levels[i], "mark delta " + ("slower" if d > 0 else "faster"),
            STATE["slower"] if d > 0 else STATE["faster"], name,
            f"{name}: {'+' if d >= 0 else ''}{fmt_num(d)} {axis_unit(axis)}")
    bar(n - 1, lo, end[1] / unit_div, "mark total", STATE["total"], end[0],
        f"{end[0]}: {fmt_num(end[1] / unit_div)} {axis_unit(axis)}")
    items.append(_line(left, ys(lo), right, ys(lo), cls="axis-line"))
    legend = [("slower (B − A > 0)", STATE["slower"]), ("faster", STATE["faster"]), ("totals", STATE["total"])]
    return Chart("waterfall", title, WIDTH, top + h + bottom, items, legend=legend, note=note)

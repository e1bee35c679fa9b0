#!/usr/bin/env python3
"""Pictures of a heat run, without a display.

  heat_plot.py slice FILE.vtkhdf [--axis x|y|z] [--index K | --position P] [-o OUT.png]
  heat_plot.py history DIR/history.csv [-o OUT.png]
  heat_plot.py scaling OUTDIR/scaling.csv [-o OUT.png]

`slice` draws one plane of a snapshot or checkpoint's temperature, coloured,
with a colour bar and axes in the run's units (from the file's Origin and
Spacing). The default plane is the middle one normal to z, the only one of a
2D run. `history` draws the residual max|du/dt| (log scale) and the simulated
time against the step, from a run's history.csv. `scaling` draws the
weak-scaling efficiency (GLUP/s per GPU against one GPU's) and the
strong-scaling speedup against the rank count, one line per precision,
temporal_block and transport, from the scaling.csv of tools/gpu_scaling.sh.

Exit status: 0 done, 2 bad usage or a file that is missing or not of the
expected layout (the message says which). Needs Python 3 with numpy, h5py and
matplotlib (Debian: python3-h5py python3-matplotlib).
"""

import argparse
import csv
import math
import os
import re
import sys

PROG = "heat_plot.py"


class UsageError(Exception):
    """A problem with the command line or an input file: exit status 2."""


def need_modules(*names):
    """Imports `names` (matplotlib last: it is slow to import, and a bad input
    file is better reported before that)."""
    try:
        for name in names:
            __import__(name)
    except ImportError as e:
        raise UsageError(
            "%s; this tool needs numpy, h5py and matplotlib "
            "(Debian: apt-get install python3-h5py python3-matplotlib)" % e)
    if "matplotlib" in names:
        import matplotlib
        matplotlib.use("Agg")  # headless: never open a window


def check_readable(path):
    if not os.path.exists(path):
        raise UsageError("%s: no such file" % path)
    if os.path.isdir(path):
        raise UsageError("%s: is a directory, not a file" % path)
    if not os.access(path, os.R_OK):
        raise UsageError("%s: not readable" % path)


# ---------------------------------------------------------------- snapshots

AXES = "xyz"


def attr_text(v):
    if isinstance(v, bytes):
        return v.decode("ascii", "replace")
    if hasattr(v, "tobytes") and getattr(v, "dtype", None) is not None and v.dtype.kind == "S":
        return v.tobytes().decode("ascii", "replace").rstrip("\0")
    return str(v)


def read_snapshot(path):
    """The field (nz, ny, nx) and the grid of a VTKHDF ImageData file."""
    import h5py
    import numpy as np

    check_readable(path)
    if not h5py.is_hdf5(path):
        raise UsageError("%s: not an HDF5 file (expected a .vtkhdf snapshot or checkpoint)" % path)
    try:
        with h5py.File(path, "r") as f:
            if "VTKHDF" not in f:
                raise UsageError("%s: no /VTKHDF group: not a VTKHDF file" % path)
            g = f["VTKHDF"]
            kind = attr_text(g.attrs.get("Type", b""))
            if kind != "ImageData":
                raise UsageError("%s: /VTKHDF Type is %r, expected 'ImageData'" % (path, kind))
            for key in ("WholeExtent", "Origin", "Spacing"):
                if key not in g.attrs:
                    raise UsageError("%s: /VTKHDF has no %s attribute" % (path, key))
            ext = [int(v) for v in np.asarray(g.attrs["WholeExtent"]).ravel()]
            origin = [float(v) for v in np.asarray(g.attrs["Origin"]).ravel()]
            spacing = [float(v) for v in np.asarray(g.attrs["Spacing"]).ravel()]
            if len(ext) != 6 or len(origin) != 3 or len(spacing) != 3:
                raise UsageError("%s: WholeExtent, Origin or Spacing of the wrong length "
                                 "(%d, %d, %d; expected 6, 3, 3)"
                                 % (path, len(ext), len(origin), len(spacing)))
            n = [ext[1] - ext[0] + 1, ext[3] - ext[2] + 1, ext[5] - ext[4] + 1]
            if "PointData" not in g or "temperature" not in g["PointData"]:
                raise UsageError("%s: no /VTKHDF/PointData/temperature dataset" % path)
            ds = g["PointData"]["temperature"]
            if tuple(ds.shape) != (n[2], n[1], n[0]):
                raise UsageError("%s: temperature has shape %s, but WholeExtent says (nz, ny, nx) "
                                 "= (%d, %d, %d)" % (path, tuple(ds.shape), n[2], n[1], n[0]))
            field = ds[()]
            step = int(f.attrs["step"]) if "step" in f.attrs else None
            time = float(f.attrs["time"]) if "time" in f.attrs else None
    except UsageError:
        raise
    except (OSError, KeyError, ValueError) as e:
        raise UsageError("%s: cannot read: %s" % (path, e))
    return {"field": field, "n": n, "origin": origin, "spacing": spacing,
            "step": step, "time": time, "name": run_name(path)}


def run_name(path):
    """The run's name from `<name>_<step>.vtkhdf` or `<name>_ckpt_<step>.vtkhdf`."""
    base = os.path.basename(path)
    m = re.match(r"^(.*?)(_ckpt)?_(\d+)\.vtkhdf$", base)
    if m:
        return m.group(1) + (" (checkpoint)" if m.group(2) else "")
    return os.path.splitext(base)[0]


def choose_plane(snap, axis, index, position):
    """The index along `axis` of the plane to draw."""
    d = AXES.index(axis)
    n = snap["n"][d]
    if snap["n"][2] == 1 and axis != "z":
        raise UsageError("this is a 2D run (nz = 1): its only plane is normal to z; "
                         "leave out --axis or use --axis z")
    if n == 1:
        return 0  # the one plane of a 2D run, wherever its z is
    if position is not None:
        o, h = snap["origin"][d], snap["spacing"][d]
        lo, hi = o, o + (n - 1) * h
        if not (min(lo, hi) - 0.5 * abs(h) <= position <= max(lo, hi) + 0.5 * abs(h)):
            raise UsageError("--position %g is outside the grid: %s runs from %g to %g"
                             % (position, axis, lo, hi))
        return min(max(int(round((position - o) / h)), 0), n - 1)
    if index is not None:
        k = index + n if index < 0 else index
        if not 0 <= k < n:
            raise UsageError("--index %d is outside 0..%d (n%s = %d)" % (index, n - 1, axis, n))
        return k
    return (n - 1) // 2


def plot_slice(args):
    need_modules("numpy", "h5py")
    snap = read_snapshot(args.file)
    axis = args.axis
    k = choose_plane(snap, axis, args.index, args.position)
    need_modules("matplotlib")
    import matplotlib
    import matplotlib.pyplot as plt
    import numpy as np

    if args.cmap not in matplotlib.colormaps:
        raise UsageError("--cmap %s: not a matplotlib colour map (try inferno, viridis, "
                         "coolwarm)" % args.cmap)
    u = snap["field"]
    d = AXES.index(axis)
    if axis == "z":
        plane, ha, va = u[k, :, :], 0, 1
    elif axis == "y":
        plane, ha, va = u[:, k, :], 0, 2
    else:
        plane, ha, va = u[:, :, k], 1, 2
    o, h, n = snap["origin"], snap["spacing"], snap["n"]

    def edges(a):  # node-centred: each value covers +-h/2 around its node
        return (o[a] - 0.5 * h[a], o[a] + (n[a] - 0.5) * h[a])

    x0, x1 = edges(ha)
    y0, y1 = edges(va)
    fig, ax = plt.subplots(figsize=(6.4, 5.0), dpi=args.dpi)
    vmin = args.vmin if args.vmin is not None else float(np.nanmin(plane))
    vmax = args.vmax if args.vmax is not None else float(np.nanmax(plane))
    im = ax.imshow(np.asarray(plane, dtype=np.float64), origin="lower", extent=(x0, x1, y0, y1),
                   cmap=args.cmap, vmin=vmin, vmax=vmax, interpolation="nearest",
                   aspect="equal")
    ax.set_xlabel(AXES[ha])
    ax.set_ylabel(AXES[va])
    # A colour bar as tall as the picture, whatever the plane's aspect ratio.
    from mpl_toolkits.axes_grid1 import make_axes_locatable
    cax = make_axes_locatable(ax).append_axes("right", size="4%", pad=0.15)
    fig.colorbar(im, cax=cax, label="temperature")
    where = "%s = %.6g" % (axis, o[d] + k * h[d])
    if snap["n"][2] > 1 or axis != "z":
        where += " (index %d of %d)" % (k, n[d])
    else:
        where = "2D"
    step = "step %d" % snap["step"] if snap["step"] is not None else "step ?"
    time = "t = %.6g" % snap["time"] if snap["time"] is not None else "t = ?"
    ax.set_title("%s, %s, %s\n%s" % (snap["name"], step, time, where), fontsize=10)
    fig.tight_layout()
    out = args.output or default_output(args.file, "_%s%d.png" % (axis, k))
    save(fig, out)


# ---------------------------------------------------------------- history

def read_history(path):
    check_readable(path)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError("%s: not a text file (expected a heat history.csv): %s" % (path, e))
    if not rows:
        raise UsageError("%s: empty file (expected a header step,time,residual,...)" % path)
    header = [c.strip() for c in rows[0]]
    need = ("step", "time", "residual")
    if any(c not in header for c in need):
        raise UsageError("%s: header %r lacks %s: not a heat history.csv"
                         % (path, ",".join(header), ", ".join(c for c in need if c not in header)))
    col = {c: header.index(c) for c in need}
    steps, times, res = [], [], []
    for i, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        try:
            steps.append(int(row[col["step"]]))
            times.append(float(row[col["time"]]))
            r = row[col["residual"]].strip() if len(row) > col["residual"] else ""
            res.append(float(r) if r else math.nan)
        except (ValueError, IndexError):
            raise UsageError("%s:%d: not a row of numbers: %s" % (path, i, ",".join(row)))
    if not steps:
        raise UsageError("%s: no rows after the header" % path)
    return steps, times, res


def plot_history(args):
    steps, times, res = read_history(args.file)
    need_modules("matplotlib")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(6.4, 5.0), dpi=args.dpi)
    pts = [(s, r) for s, r in zip(steps, res) if r == r and r > 0]
    if pts:
        ax1.semilogy([p[0] for p in pts], [p[1] for p in pts], ".-", color="tab:red")
    else:
        ax1.text(0.5, 0.5, "no residual recorded", ha="center", va="center",
                 transform=ax1.transAxes)
    ax1.set_ylabel("residual max|du/dt|")
    ax1.grid(True, which="both", alpha=0.3)
    ax2.plot(steps, times, ".-", color="tab:blue")
    ax2.set_xlabel("step")
    ax2.set_ylabel("time")
    ax2.grid(True, alpha=0.3)
    run = os.path.basename(os.path.dirname(os.path.abspath(args.file)))
    ax1.set_title("%s: history (%d rows, last step %d, t = %.6g)"
                  % (run, len(steps), steps[-1], times[-1]), fontsize=10)
    fig.tight_layout()
    out = args.output or default_output(args.file, ".png")
    save(fig, out)


# ---------------------------------------------------------------- scaling

SCALING_COLUMNS = ("kind", "ranks", "precision", "k", "transport", "glups")


def read_scaling(path):
    """The rows of tools/gpu_scaling.sh's scaling.csv that ran (exit 0, a
    GLUP/s figure): dicts with ranks an int and glups a float."""
    check_readable(path)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            lines = list(csv.reader(f))
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError("%s: not a text file (expected tools/gpu_scaling.sh's scaling.csv): %s"
                         % (path, e))
    if not lines:
        raise UsageError("%s: empty file (expected a header kind,ranks,...)" % path)
    header = [c.strip() for c in lines[0]]
    rows = [(i, dict(zip(header, (v.strip() for v in line))))
            for i, line in enumerate(lines[1:], start=2) if line]
    missing = [c for c in SCALING_COLUMNS if c not in header]
    if missing:
        raise UsageError("%s: header %r lacks %s: not a scaling.csv of tools/gpu_scaling.sh"
                         % (path, ",".join(header), ", ".join(missing)))
    out = []
    for i, row in rows:
        if any(c not in row for c in SCALING_COLUMNS):
            raise UsageError("%s:%d: fewer columns than the header: %s"
                             % (path, i, ",".join(row.values())))
        if row.get("exit", "0") != "0" or not row["glups"]:
            continue  # a failed or skipped run
        try:
            r = dict(row)
            r["ranks"] = int(row["ranks"])
            r["glups"] = float(row["glups"])
        except (TypeError, ValueError):
            raise UsageError("%s:%d: ranks or glups not a number: %s"
                             % (path, i, ",".join(row.values())))
        if r["ranks"] < 1 or not r["glups"] > 0 or r["glups"] == float("inf"):
            raise UsageError("%s:%d: ranks %s and glups %s: expected ranks >= 1 and glups > 0"
                             % (path, i, row["ranks"], row["glups"]))
        out.append(r)
    if not out:
        raise UsageError("%s: no run with a GLUP/s figure" % path)
    return out


def scaling_lines(rows, kind):
    """{(precision, k, transport): [(ranks, value)]} for one kind: weak, the
    GLUP/s per rank over the one-rank GLUP/s of the same precision and k;
    strong, the GLUP/s over it. The one-rank run has no halos (transport "-")
    and starts every transport's line; several rows of one point (a step run
    twice) are averaged. Also the groups left out for want of a one-rank run."""
    base, pts = {}, {}
    for r in rows:
        if r["kind"] != kind:
            continue
        if r["ranks"] == 1:
            base.setdefault((r["precision"], r["k"]), []).append(r["glups"])
        else:
            key = (r["precision"], r["k"], r["transport"])
            pts.setdefault(key, {}).setdefault(r["ranks"], []).append(r["glups"])
    lines, lacking = {}, []
    for key in sorted(pts):
        b = base.get(key[:2])
        if not b:
            lacking.append(key)
            continue
        b1 = sum(b) / len(b)
        line = [(1, 1.0)]
        for n in sorted(pts[key]):
            g = sum(pts[key][n]) / len(pts[key][n])
            line.append((n, g / n / b1 if kind == "weak" else g / b1))
        lines[key] = line
    if not pts:  # one-rank runs only: a point per precision and k
        for pk in sorted(base):
            lines[pk + ("-",)] = [(1, 1.0)]
    return lines, lacking


def plot_scaling(args):
    rows = read_scaling(args.file)
    weak, lack_w = scaling_lines(rows, "weak")
    strong, lack_s = scaling_lines(rows, "strong")
    for kind, lack in (("weak", lack_w), ("strong", lack_s)):
        for key in lack:
            print("%s: %s scaling, %s k=%s %s: no one-rank run to compare with; left out"
                  % (PROG, kind, key[0], key[1], key[2]), file=sys.stderr)
    if not weak and not strong:
        raise UsageError("%s: no weak or strong rows with a one-rank run" % args.file)
    need_modules("matplotlib")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11.0, 4.6), dpi=args.dpi)
    for ax, lines, title, ylabel in (
            (ax1, weak, "weak scaling", "efficiency (GLUP/s per GPU / 1 GPU)"),
            (ax2, strong, "strong scaling", "speedup (GLUP/s / 1 GPU)")):
        ranks = sorted({n for line in lines.values() for n, _ in line}) or [1]
        for key, line in sorted(lines.items()):
            ax.plot([p[0] for p in line], [p[1] for p in line], "o-",
                    label="%s, k=%s, %s" % key)
        if ax is ax1:
            ax.axhline(1.0, color="grey", ls="--", lw=1, label="ideal")
            ax.set_ylim(bottom=0)
        else:
            ax.plot(ranks, ranks, color="grey", ls="--", lw=1, label="ideal")
        if not lines:
            ax.text(0.5, 0.5, "no %s rows" % title, ha="center", va="center",
                    transform=ax.transAxes)
        ax.set_xscale("log", base=2)
        ax.set_xticks(ranks)
        ax.set_xticklabels([str(n) for n in ranks])
        ax.set_xlabel("ranks (GPUs)")
        ax.set_ylabel(ylabel)
        kind = title.split()[0]
        sizes = sorted((r["ranks"], r.get("points", "")) for r in rows if r["kind"] == kind)
        if sizes and sizes[0][1]:  # the grid of the fewest ranks and of the most
            title += " (%s)" % sizes[0][1] if sizes[0][1] == sizes[-1][1] else \
                " (%s to %s)" % (sizes[0][1], sizes[-1][1])
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    out = args.output or default_output(args.file, ".png")
    save(fig, out)


# ---------------------------------------------------------------- common

def default_output(path, suffix):
    return os.path.splitext(path)[0] + suffix


def output_path(fig, out):
    """The file a figure goes to: a directory is refused, a name without an
    extension gets .png (as matplotlib would add it, said here), and an
    extension must name a format matplotlib writes."""
    if os.path.isdir(out):
        raise UsageError("-o %s: a directory; give a file name such as %s"
                         % (out, os.path.join(out, "plot.png")))
    ext = os.path.splitext(out)[1][1:].lower()
    if not ext:
        return out + ".png"
    formats = fig.canvas.get_supported_filetypes()
    if ext not in formats:
        raise UsageError("-o %s: matplotlib writes no .%s files (it writes %s)"
                         % (out, ext, ", ".join("." + f for f in sorted(formats))))
    return out


def save(fig, out):
    import matplotlib.pyplot as plt

    try:
        out = output_path(fig, out)
        fig.savefig(out, bbox_inches="tight")
    except OSError as e:
        raise UsageError("cannot write %s: %s" % (out, e))
    except ValueError as e:  # e.g. an image too large for the --dpi asked
        raise UsageError("cannot draw %s: %s" % (out, e))
    finally:
        plt.close(fig)
    print("%s: wrote %s" % (PROG, out))


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog=PROG, description="Pictures of a heat run (PNG, no display needed).",
        epilog="exit status: 0 done, 2 bad usage or input file")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    s = sub.add_parser("slice", help="one plane of a snapshot's temperature",
                       description="Draw one plane of the temperature in a .vtkhdf snapshot or "
                       "checkpoint, in physical units. Default: the middle plane normal to z "
                       "(the only plane of a 2D run).")
    s.add_argument("file", metavar="FILE.vtkhdf")
    s.add_argument("--axis", choices=list(AXES), default="z",
                   help="the plane's normal (default z)")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--index", type=int, help="plane index along the axis (negative counts "
                       "from the end; default the middle)")
    where.add_argument("--position", type=float,
                       help="plane coordinate along the axis; the nearest node plane is drawn")
    s.add_argument("--vmin", type=float, help="lower end of the colour scale (default the data's)")
    s.add_argument("--vmax", type=float, help="upper end of the colour scale (default the data's)")
    s.add_argument("--cmap", default="inferno", help="matplotlib colour map (default inferno)")
    s.add_argument("--dpi", type=int, default=100, help="resolution (default 100)")
    s.add_argument("-o", "--output", metavar="OUT.png",
                   help="output file; .png is added to a name without an extension (default FILE_<axis><index>.png beside FILE)")
    s.set_defaults(func=plot_slice)

    h = sub.add_parser("history", help="residual and time against step from history.csv",
                       description="Draw the residual max|du/dt| (log scale) and the simulated "
                       "time against the step from a run's history.csv.")
    h.add_argument("file", metavar="history.csv")
    h.add_argument("--dpi", type=int, default=100, help="resolution (default 100)")
    h.add_argument("-o", "--output", metavar="OUT.png",
                   help="output file; .png is added to a name without an extension (default history.png beside the csv)")
    h.set_defaults(func=plot_history)

    c = sub.add_parser("scaling", help="weak-scaling efficiency and strong-scaling speedup",
                       description="Draw the weak-scaling efficiency (GLUP/s per GPU against "
                       "the one-GPU run's) and the strong-scaling speedup against the rank "
                       "count from the scaling.csv of tools/gpu_scaling.sh, one line per "
                       "precision, temporal_block and transport.")
    c.add_argument("file", metavar="scaling.csv")
    c.add_argument("--dpi", type=int, default=100, help="resolution (default 100)")
    c.add_argument("-o", "--output", metavar="OUT.png",
                   help="output file; .png is added to a name without an extension (default scaling.png beside the csv)")
    c.set_defaults(func=plot_scaling)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if not 0 < args.dpi <= 2000:
        print("%s: --dpi %d: expected 1 to 2000" % (PROG, args.dpi), file=sys.stderr)
        return 2
    for name in ("vmin", "vmax"):
        v = getattr(args, name, None)
        if v is not None and not math.isfinite(v):
            print("%s: --%s %s: expected a finite number" % (PROG, name, v), file=sys.stderr)
            return 2
    if getattr(args, "vmin", None) is not None and getattr(args, "vmax", None) is not None \
            and not args.vmin < args.vmax:
        print("%s: --vmin %g --vmax %g: expected vmin < vmax" % (PROG, args.vmin, args.vmax),
              file=sys.stderr)
        return 2
    try:
        args.func(args)
    except UsageError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

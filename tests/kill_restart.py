"""Kill a run at random moments and continue it; the result must not change.

  python3 tests/kill_restart.py --heat PATH/heat --work SCRATCH_DIR [--kills 8] [--seed N]

1. A reference run of a deck with frequent checkpoints, uninterrupted; and
   the same deck stopped by time.max_steps at a step where a snapshot, a
   checkpoint and a residual check fall together, then continued.
2. The same deck run with `--restart latest` again and again, each run
   SIGKILLed at a random moment. After every kill: each .vtkhdf under its
   final name reads back whole (checksums verified), the .xmf parses and
   names only files that exist, and `heat info` accepts the newest
   checkpoint. A run that ends before its kill completes its chain, which is
   then checked and a new chain begins.
3. The last chain is continued to the end, and one more run is stopped with
   SIGTERM (exit status 143, a checkpoint written) and continued.
Every finished chain must match the reference: the same snapshot files with
the same step, time and temperature bytes, an .xmf of the same snapshots and
times, the same step/time/residual rows in history.csv (those with a residual), and no more than
output.keep_checkpoints checkpoints.

Exit status 0 when all holds, 1 with the reason otherwise. Needs h5py.
"""

import argparse
import csv
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

PROG = "kill_restart"
NAME = "kr"
KEEP = 2
PLANNED_STOP = 1200  # a multiple of output.every, checkpoint_every and check_every
STEPS = 2000  # the deck's time.max_steps

# About a second of work on two CPU cores: 80x72x64 points, 2000 steps, a
# checkpoint every 40 steps (50 of them, each a few MB written and fsynced).
DECK = """\
name = "%s";
grid = { points = [80, 72, 64]; length = [1.0, 0.9, 0.8]; };
material = { diffusivity = 1.0e-4; };
time = { max_steps = %d; };
steady = { tolerance = 1.0e-12; check_every = 50; };
initial = { type = "gaussian"; center = [0.3, 0.45, 0.4]; width = 0.1; amplitude = 80.0;
            base = 20.0; };
boundary = {
  x_lo = { type = "dirichlet"; value = 100.0; };
  x_hi = { type = "dirichlet"; value = 0.0; };
  y_lo = { type = "periodic"; };
  y_hi = { type = "periodic"; };
  z_lo = { type = "neumann"; gradient = 0.0; };
  z_hi = { type = "neumann"; gradient = -20.0; };
};
output = { dir = "ref"; every = 300; checkpoint_every = 40; keep_checkpoints = %d; };
solver = { backend = "cpu"; precision = "double"; };
""" % (NAME, STEPS, KEEP)


class Failure(Exception):
    pass


def log(msg):
    print("%s: %s" % (PROG, msg), flush=True)


class Runner:
    def __init__(self, heat, work):
        self.heat = heat
        self.work = work
        self.deck = os.path.join(work, NAME + ".cfg")

    def cmd(self, outdir, restart=True, extra=()):
        c = [self.heat, "run", self.deck, "--quiet", "--set", 'output.dir="%s"' % outdir]
        return c + list(extra) + (["--restart", "latest"] if restart else [])

    def start(self, outdir):
        return subprocess.Popen(self.cmd(outdir), cwd=self.work, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, universal_newlines=True)

    def run(self, outdir, restart=True, extra=()):
        p = subprocess.run(self.cmd(outdir, restart, extra), cwd=self.work, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True)
        if p.returncode != 0:
            raise Failure("%s exited with %d:\n%s"
                          % (" ".join(self.cmd(outdir, restart, extra)), p.returncode, p.stdout))
        return p.stdout

    def info(self, path):
        p = subprocess.run([self.heat, "info", path], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True)
        if p.returncode != 0:
            raise Failure("heat info %s exited with %d:\n%s" % (path, p.returncode, p.stdout))


def files(d, kind):
    pat = {"snap": r"^%s_(\d{8})\.vtkhdf$", "ckpt": r"^%s_ckpt_(\d{8})\.vtkhdf$"}[kind]
    rx = re.compile(pat % re.escape(NAME))
    out = []
    for n in os.listdir(d) if os.path.isdir(d) else []:
        m = rx.match(n)
        if m:
            out.append((int(m.group(1)), n))
    return sorted(out)


def read_field(path):
    """step, time, dtype and raw bytes of the temperature (checksums verified)."""
    import h5py
    try:
        with h5py.File(path, "r") as f:
            ds = f["VTKHDF/PointData/temperature"]
            u = ds[()]
            return int(f.attrs["step"]), float(f.attrs["time"]), str(u.dtype), u.tobytes()
    except (OSError, KeyError) as e:
        raise Failure("%s: cannot be read back whole: %s" % (path, e))


def xmf_entries(path):
    """[(time, file)] of an .xmf temporal collection."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        raise Failure("%s: not a readable XML file: %s" % (path, e))
    out = []
    for g in root.iter("Grid"):
        t = g.find("Time")
        item = g.find("Attribute/DataItem")
        if t is None or item is None:
            continue
        out.append((float(t.get("Value")), item.text.strip().split(":")[0]))
    return out


def history_rows(path):
    """The rows that carry a residual. A run also writes a row without one for
    the step it starts from, so a restarted run has one more per restart."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    head = rows[0]
    cols = [head.index(c) for c in ("step", "time", "residual")]
    return [tuple(r[c] for c in cols) for r in rows[1:] if r and r[cols[2]]]


def check_after_kill(runner, d):
    """What a SIGKILL may leave: only whole files under final names."""
    if not os.path.isdir(d):
        return None
    for _, n in files(d, "snap") + files(d, "ckpt"):
        read_field(os.path.join(d, n))
    xmf = os.path.join(d, NAME + ".xmf")
    if os.path.exists(xmf):
        for t, fn in xmf_entries(xmf):
            if not os.path.exists(os.path.join(d, fn)):
                raise Failure("%s names %s (t = %r), which does not exist" % (xmf, fn, t))
    ckpts = files(d, "ckpt")
    if ckpts:
        runner.info(os.path.join(d, ckpts[-1][1]))
        return ckpts[-1][0]
    return None


def compare_with_reference(ref, d, stops=()):
    """`stops`: steps where a signal ended a run of the chain; each has a
    snapshot (the final step of that run) that the reference lacks."""
    rs, ds = files(ref, "snap"), files(d, "snap")
    want = sorted(set(s for s, _ in rs) | set(stops))
    if [s for s, _ in ds] != want:
        raise Failure("%s holds snapshots of steps %s, expected %s (the uninterrupted run's%s)"
                      % (d, [s for s, _ in ds], want,
                         " and the signal stops'" if stops else ""))
    for _, n in rs:
        a, b = read_field(os.path.join(ref, n)), read_field(os.path.join(d, n))
        if a[:3] != b[:3]:
            raise Failure("%s: step/time/type %s, uninterrupted run %s" % (n, b[:3], a[:3]))
        if a[3] != b[3]:
            i = next(k for k in range(len(a[3])) if a[3][k] != b[3][k])
            raise Failure("%s/%s: temperature differs from the uninterrupted run's, first at "
                          "byte %d" % (d, n, i))
    # A stop on a step where the uninterrupted run writes a snapshot anyway
    # adds nothing: only the stops' own snapshots are extra.
    extra = set("%s_%08d.vtkhdf" % (NAME, s) for s in stops) - set(n for _, n in rs)
    rx = xmf_entries(os.path.join(ref, NAME + ".xmf"))
    dx = [(t, fn) for t, fn in xmf_entries(os.path.join(d, NAME + ".xmf")) if fn not in extra]
    if rx != dx:
        only_d = [e for e in dx if e not in rx]
        only_r = [e for e in rx if e not in dx]
        raise Failure("%s: %s.xmf differs from the uninterrupted run's: entries only here "
                      "(time, file) %s; entries only there %s%s"
                      % (d, NAME, only_d or "none", only_r or "none",
                         "; the same entries in another order" if not only_d and not only_r
                         else ""))
    rh = history_rows(os.path.join(ref, "history.csv"))
    dh = history_rows(os.path.join(d, "history.csv"))
    if rh != dh:
        diff = next((i for i in range(min(len(rh), len(dh))) if rh[i] != dh[i]),
                    min(len(rh), len(dh)))
        raise Failure("%s/history.csv (%d rows) differs from the uninterrupted run's (%d rows) "
                      "at row %d: %s vs %s" % (d, len(dh), len(rh), diff + 1,
                                               dh[diff] if diff < len(dh) else "none",
                                               rh[diff] if diff < len(rh) else "none"))
    ck = files(d, "ckpt")
    if not ck or len(ck) > KEEP:
        raise Failure("%s holds %d checkpoints after the run ended, expected 1 to %d"
                      % (d, len(ck), KEEP))
    if ck[-1][0] != rs[-1][0]:
        raise Failure("%s: newest checkpoint at step %d, the run ended at step %d"
                      % (d, ck[-1][0], rs[-1][0]))
    log("%s: final step %d: snapshots, xmf and history identical to the uninterrupted run"
        % (os.path.basename(d), rs[-1][0]))


def main():
    p = argparse.ArgumentParser(prog=PROG)
    p.add_argument("--heat", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--kills", type=int, default=8)
    p.add_argument("--seed", type=int)
    args = p.parse_args()
    try:
        import h5py  # noqa: F401
    except ImportError as e:
        print("%s: %s: this test reads HDF5 files with h5py (Debian: python3-h5py)"
              % (PROG, e), file=sys.stderr)
        return 1
    seed = args.seed if args.seed is not None else int(time.time() * 1000) % 1000000
    rng = random.Random(seed)
    log("seed %d (repeat with --seed %d)" % (seed, seed))

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    runner = Runner(os.path.abspath(args.heat), args.work)
    with open(runner.deck, "w") as f:
        f.write(DECK)
    ref = os.path.join(args.work, "ref")
    t0 = time.monotonic()
    runner.run("ref", restart=False)
    wall = time.monotonic() - t0
    log("uninterrupted run: %.2f s" % wall)

    failures = []

    def verify(d, stops=()):
        try:
            compare_with_reference(ref, d, stops)
        except Failure as e:
            failures.append(str(e))
            print("%s: MISMATCH: %s" % (PROG, e), file=sys.stderr, flush=True)

    # A planned stop at a step that is a snapshot, checkpoint and residual
    # check step at once, then --restart latest to the end.
    t1 = time.monotonic()
    runner.run("planned", restart=False, extra=["--set", "time.max_steps=%d" % PLANNED_STOP])
    log("planned: stopped at step %d, continuing" % PLANNED_STOP)
    runner.run("planned")
    # The first run may have been slowed by cold caches: the kills' delays
    # are shares of the fastest whole run seen.
    wall = min(wall, time.monotonic() - t1)
    verify(os.path.join(args.work, "planned"))

    chain, chains_done, landed = 1, 1, 0
    d = os.path.join(args.work, "chain%d" % chain)
    newest = 0  # the chain's newest checkpoint step: the run has the rest to do
    for k in range(args.kills):
        left = 1.0 - newest / float(STEPS)  # the share of the work this run has to do
        delay = rng.uniform(0.05, 0.7) * wall * left
        started = time.monotonic()
        proc = runner.start(os.path.basename(d))
        try:
            out, _ = proc.communicate(timeout=delay)
            finished = True
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            out, _ = proc.communicate()
            finished = False
        if finished:
            if proc.returncode != 0:
                raise Failure("a --restart latest run in %s exited with %d:\n%s"
                              % (d, proc.returncode, out))
            log("kill %d: the run ended before its kill at %.2f s" % (k + 1, delay))
            wall = min(wall, (time.monotonic() - started) / left)
            verify(d)
            chains_done += 1
            chain += 1
            d = os.path.join(args.work, "chain%d" % chain)
            newest = 0
            continue
        landed += 1
        step = check_after_kill(runner, d)
        newest = step or 0
        log("kill %d: SIGKILL after %.2f s; newest checkpoint: %s"
            % (k + 1, delay, "step %d" % step if step is not None else "none yet"))

    # Most kills must land mid-run (each waits a share of what is left).
    if args.kills and landed < (args.kills + 1) // 2:
        raise Failure("only %d of %d kills landed before their run ended (seed %d)"
                      % (landed, args.kills, seed))
    log("continuing %s to the end" % os.path.basename(d))
    runner.run(os.path.basename(d))
    verify(d)
    chains_done += 1

    # SIGTERM: the run stops after the step it is in and writes a checkpoint.
    # Should the run end before the signal, it is tried again, sooner; should
    # the signal come before the run handles it (killed by it), later.
    d = os.path.join(args.work, "term")
    share = rng.uniform(0.3, 0.6)
    for _ in range(4):
        shutil.rmtree(d, ignore_errors=True)
        delay = share * wall
        proc = runner.start("term")
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate()
        if proc.returncode == 0:
            log("SIGTERM: the run ended before the signal at %.2f s; again, sooner" % delay)
            share = max(0.1, share / 2)
        elif proc.returncode == -signal.SIGTERM:
            log("SIGTERM: at %.2f s the run did not handle signals yet; again, later" % delay)
            share = min(0.9, share * 1.5)
        else:
            break
    stops = []
    if proc.returncode in (0, -signal.SIGTERM):
        raise Failure("SIGTERM: no run of four stopped on its signal (the last at %.2f s, exit "
                      "status %d)" % (delay, proc.returncode))
    elif proc.returncode != 128 + signal.SIGTERM:
        raise Failure("after SIGTERM the run exited with %d, expected 143:\n%s"
                      % (proc.returncode, out))
    else:
        step = check_after_kill(runner, d)
        if step is None:
            raise Failure("after SIGTERM %s holds no checkpoint" % d)
        log("SIGTERM: exit status 143, checkpoint at step %d" % step)
        stops.append(step)
    runner.run("term")
    verify(d, stops)
    chains_done += 1
    if failures:
        raise Failure("%d of %d continued runs differ from the uninterrupted run (seed %d)"
                      % (len(failures), chains_done, seed))
    log("ok: %d kills, %d of them mid-run, %d chains continued to the end, %.1f s"
        % (args.kills, landed, chains_done, time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print("%s: FAILED: %s" % (PROG, e), file=sys.stderr)
        sys.exit(1)

"""Runs heat under MPI and checks every result against a one-process run.

  python3 tests/mpi_check.py TEST --heat PATH/heat --mpiexec PATH/mpiexec --work DIR
                             [--np-flag -n] [--pvpython PATH] [--src SRC]

TEST is one of:
  splits    awkward sizes (23 x 17 x 13, 31 x 19 x 1) split along each axis and
            all three, on 1, 2, 3, 4 and 8 processes, every face type (periodic
            axes cut across ranks included), float and double, halos 1 and 3
            layers deep, files written collectively and gathered to rank 0;
  restart   a run checkpointed on 4 ranks continued on 3, and one of a single
            process continued on 4;
  signal    SIGTERM to one rank: every rank stops at the same step with one
            checkpoint, exit 143, and the run continued from it ends as an
            uninterrupted one;
  fail      an injected write error on rank 1 (collective and gathered files):
            every rank ends with exit 1, the error named once with its rank, no
            temporary file left, earlier files intact; a full disk; a file
            size limit (ulimit -f) below a file's size; and one of 3
            ranks SIGKILLed while it checkpoints: the run ends (no hang), the
            launcher says a rank was killed, every file under its final name
            is whole, and --restart latest goes on to the same bits;
  badsplit  splits that do not fit: exit 2 on every rank, the message once,
            nothing written;
  paraview  ParaView reads the snapshots of a 4-rank run from another working
            directory, every value checked (tests/paraview_check.py);
  multigrid steady multigrid solves and backward-Euler and Crank-Nicolson steps
            (every face type, materials and sources, periodic axes cut,
            float and double) split along each axis and several, with the
            levels split as deep as the grid allows (HEAT_TEST_MG_GATHER=0)
            and as a run splits them; an implicit run checkpointed on 3 ranks
            continued on 2; a singular problem (its kept mean an exact sum)
            split and on 1 and 2 threads; and a grid of one level, which
            a split cannot run, refused with exit 2.

Options for the GPU machine (tools/gpu_mpi_check.sh): --backend cuda runs the
ranks on the CUDA backend (--kernel K: its kernel), --ref-backend the one
process that they are compared with (cpu, the reference, by default), and
--max-np N leaves out the cases of more than N processes. --gpu-views fused
(or steps) has the CPU ranks walk the CUDA backend's geometry (aligned views,
fused passes, the residual apart: HEAT_TEST_GPU_VIEWS), so that CI checks it.

Equality is bit for bit: the field of every snapshot and checkpoint, and the
step, time, residual, min and max columns of history.csv (rows with a
residual; the mean adds the ranks' sums, so it may differ in the last digit). Exit
status 0 when all holds, 1 with the reason otherwise. Needs h5py and numpy.
"""

import argparse
import errno
import os
import re
import shutil
import signal
import subprocess
import sys
import time

PROG = "mpi_check"

DECK3 = """\
name = "%(name)s";
grid = { points = [23, 17, 13]; length = [1.1, 0.8, 0.6]; origin = [0.5, -1.0, 2.0]; };
material = { diffusivity = 1.0; };
time = { max_steps = 37; };
steady = { tolerance = 1e-12; check_every = 5; };
initial = { type = "gaussian"; center = [0.8, -0.5, 2.2]; width = 0.2; amplitude = 3.0;
            base = 0.5; };
boundary = {
  x_lo = { type = "dirichlet"; value = 1.0; };
  x_hi = { type = "neumann"; gradient = 0.5; };
  y_lo = { type = "periodic"; };
  y_hi = { type = "periodic"; };
  z_lo = { type = "neumann"; gradient = -1.0; };
  z_hi = { type = "dirichlet"; value = 0.0; };
};
output = { dir = "%(name)s"; every = 10; checkpoint_every = 15; };
solver = { backend = "cpu"; };
"""

# x and z periodic (cut across ranks below), y Dirichlet on one face and
# Neumann on the other.
DECK_PERIODIC = DECK3.replace(
    """  x_lo = { type = "dirichlet"; value = 1.0; };
  x_hi = { type = "neumann"; gradient = 0.5; };
  y_lo = { type = "periodic"; };
  y_hi = { type = "periodic"; };
  z_lo = { type = "neumann"; gradient = -1.0; };
  z_hi = { type = "dirichlet"; value = 0.0; };""",
    """  x_lo = { type = "periodic"; };
  x_hi = { type = "periodic"; };
  y_lo = { type = "dirichlet"; value = 2.0; };
  y_hi = { type = "neumann"; gradient = 0.25; };
  z_lo = { type = "periodic"; };
  z_hi = { type = "periodic"; };""")

DECK2 = DECK3.replace("points = [23, 17, 13]", "points = [31, 19, 1]")

# Two materials painted by regions, a source, a convective and a flux face
# (the variable-coefficient update), y periodic.
DECK_MATERIALS = DECK3.replace(
    """material = { diffusivity = 1.0; };""",
    """materials = (
  { name = "a"; conductivity = 2.0; density = 1.0; specific_heat = 1.5; },
  { name = "b"; conductivity = 0.5; density = 2.0; specific_heat = 1.0; }
);
regions = (
  { material = "b"; box = { min = [0.9, -1.0, 2.0]; max = [1.3, -0.5, 2.6]; }; },
  { material = "b"; sphere = { center = [1.3, -0.4, 2.3]; radius = 0.2; }; }
);
sources = ( { box = { min = [0.6, -0.7, 2.1]; max = [1.0, -0.4, 2.4]; };
              power_density = 5.0; } );
probes = ( { name = "p"; at = [1.0, -0.6, 2.3]; } );""").replace(
    """  z_lo = { type = "neumann"; gradient = -1.0; };
  z_hi = { type = "dirichlet"; value = 0.0; };""",
    """  z_lo = { type = "flux"; value = 3.0; };
  z_hi = { type = "convective"; h = 4.0; ambient = 0.25; };""")


# Multigrid: a grid with several levels, solved to the steady state, or
# marched by implicit steps far above the explicit limit.
def mg_deck(deck, implicit=""):
    text = deck.replace("points = [23, 17, 13]", "points = [45, 33, 29]").replace(
        "points = [31, 19, 1]", "points = [81, 45, 1]").replace(
        "output = { dir = \"%(name)s\"; every = 10; checkpoint_every = 15; };",
        "output = { dir = \"%(name)s\"; every = 4; checkpoint_every = 6; };")
    if implicit:
        return text.replace("time = { max_steps = 37; };",
                            "time = { max_steps = 12; scheme = \"%s\"; dt = 0.004; };" % implicit)
    return text.replace("time = { max_steps = 37; };", "time = { max_steps = 30; };").replace(
        "steady = { tolerance = 1e-12; check_every = 5; };",
        "steady = { tolerance = 1e-9; method = \"multigrid\"; };")


class Failure(Exception):
    pass


def log(msg):
    print("%s: %s" % (PROG, msg), flush=True)


class Env:
    def __init__(self, a):
        self.heat = os.path.abspath(a.heat)
        self.mpiexec = a.mpiexec
        self.np_flag = a.np_flag
        self.work = os.path.abspath(a.work)
        self.pvpython = a.pvpython
        self.src = a.src
        env = dict(os.environ)
        # Open MPI refuses root and more ranks than cores unless told: CI runs
        # as root on 2 cores. One OpenMP thread per rank: the ranks share them.
        env.update({
            "OMPI_ALLOW_RUN_AS_ROOT": "1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_rmaps_base_oversubscribe": "1",
            "PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe",
            "OMPI_MCA_mpi_yield_when_idle": "1",
            "OMP_NUM_THREADS": "1",
        })
        for k in ("HEAT_TEST_FAIL_WRITE", "HEAT_TEST_FAIL_RANK", "HEAT_TEST_FREE_BYTES",
                  "HEAT_MPI", "HEAT_TEST_GPU_VIEWS"):
            env.pop(k, None)
        self.env = env
        self.max_np = a.max_np
        # The backend of the ranks and of the one process they are compared with.
        self.backend = a.backend
        self.sets = ['solver.backend="%s"' % a.backend]
        if a.kernel:
            self.sets.append('solver.kernel="%s"' % a.kernel)
        self.ref_sets = ['solver.backend="%s"' % a.ref_backend]
        self.gpu_views = a.gpu_views
        if a.gpu_views:
            env["HEAT_TEST_GPU_VIEWS"] = a.gpu_views

    def write(self, name, text):
        path = os.path.join(self.work, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def cmd(self, np, deck, outdir, sets=(), extra=(), quiet=True):
        c = [self.heat, "run", deck] + (["--quiet"] if quiet else []) + \
            ["--set", 'output.dir="%s"' % outdir]
        for s in (self.ref_sets if np == 0 else self.sets) + list(sets):
            c += ["--set", s]
        c += list(extra)
        if np == 0:
            return c  # one process, no MPI: the oracle
        return [self.mpiexec, self.np_flag, str(np)] + c

    def run(self, np, deck, outdir, sets=(), extra=(), expect=0, env=None, cwd=None, quiet=True):
        c = self.cmd(np, deck, outdir, sets, extra, quiet)
        p = subprocess.run(c, cwd=cwd or self.work, env=env or self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=300)
        if p.returncode not in (expect if isinstance(expect, tuple) else (expect,)):
            raise Failure("%s: exit status %d, expected %s\n%s"
                          % (" ".join(c), p.returncode, expect, p.stdout))
        return p.stdout


def read_field(path):
    import h5py
    with h5py.File(path, "r") as f:
        ds = f["VTKHDF/PointData/temperature"]
        return ds[()], int(f.attrs["step"]), float(f.attrs["time"])


def read_material(path):
    """The material index of a field file, or None when it has none."""
    import h5py
    with h5py.File(path, "r") as f:
        ds = f.get("VTKHDF/PointData/material")
        return None if ds is None else ds[()]


def history_rows(path):
    """Step, time and residual of the rows with a residual, and the field's
    minimum and maximum (a max is exact in any order; the mean is a sum
    over ranks, so it is left out)."""
    rows = []
    with open(path) as f:
        next(f)
        for line in f:
            col = line.strip().split(",")
            if col[2]:
                rows.append((col[0], col[1], col[2], col[4], col[5]))
    return rows


def same_run(ref, got, what, files=None):
    """Every field file of `ref` exists in `got` with the same bytes (or the
    files named); history.csv rows with a residual are equal."""
    names = files or sorted(n for n in os.listdir(ref) if n.endswith(".vtkhdf"))
    if not names:
        raise Failure("%s: the reference %s holds no field files" % (what, ref))
    for n in names:
        g = os.path.join(got, n)
        if not os.path.exists(g):
            raise Failure("%s: %s is missing" % (what, g))
        a, sa, ta = read_field(os.path.join(ref, n))
        b, sb, tb = read_field(g)
        if a.shape != b.shape or a.dtype != b.dtype or a.tobytes() != b.tobytes():
            import numpy as np
            where = np.argwhere(a != b)[:3].tolist() if a.shape == b.shape else "shape"
            raise Failure("%s: %s differs from the one-process run (first differing "
                          "(z, y, x): %s)" % (what, n, where))
        if (sa, ta) != (sb, tb):
            raise Failure("%s: %s: step and time %s, expected %s" % (what, n, (sb, tb), (sa, ta)))
        ma, mb = read_material(os.path.join(ref, n)), read_material(g)
        if (ma is None) != (mb is None) or (ma is not None and ma.tobytes() != mb.tobytes()):
            raise Failure("%s: %s: the material index differs from the one-process run"
                          % (what, n))
    ha, hb = history_rows(os.path.join(ref, "history.csv")), \
        history_rows(os.path.join(got, "history.csv"))
    if ha != hb:
        raise Failure("%s: history.csv step, time, residual, min or max differ from the one-process "
                      "run:\n%s\n%s" % (what, ha, hb))
    pa, pb = os.path.join(ref, "probes.csv"), os.path.join(got, "probes.csv")
    if os.path.exists(pa) and (not os.path.exists(pb) or open(pa).read() != open(pb).read()):
        raise Failure("%s: probes.csv differs from the one-process run" % what)
    leftovers = [n for n in os.listdir(got) if n.endswith(".tmp")]
    if leftovers:
        raise Failure("%s: temporary files left in %s: %s" % (what, got, leftovers))
    return len(names)


def fresh(env, name):
    path = os.path.join(env.work, name)
    shutil.rmtree(path, ignore_errors=True)
    return name


# ------------------------------------------------------------------ tests

def test_splits(env):
    decks = {"d3": env.write("d3.cfg", DECK3 % {"name": "d3"}),
             "per": env.write("per.cfg", DECK_PERIODIC % {"name": "per"}),
             "d2": env.write("d2.cfg", DECK2 % {"name": "d2"}),
             "mat": env.write("mat.cfg", DECK_MATERIALS % {"name": "mat"})}
    # (deck, precision, temporal_block, processes, parallel.ranks or None, io)
    cases = [
        ("d3", "double", 1, 1, None, "auto"),
        ("d3", "double", 1, 2, "[2,1,1]", "auto"),
        ("d3", "double", 1, 2, "[1,2,1]", "aggregated"),  # periodic y cut in 2
        ("d3", "double", 1, 2, "[1,1,2]", "auto"),
        ("d3", "double", 1, 3, "[3,1,1]", "auto"),
        ("d3", "double", 1, 3, "[1,3,1]", "auto"),  # periodic y cut in 3
        ("d3", "double", 1, 3, "[1,1,3]", "aggregated"),
        ("d3", "double", 1, 4, None, "auto"),
        ("d3", "double", 1, 4, "[1,2,2]", "auto"),
        ("d3", "double", 1, 8, "[2,2,2]", "auto"),
        ("d3", "float", 1, 4, "[2,2,1]", "aggregated"),
        ("d3", "float", 1, 3, "[1,1,3]", "auto"),
        ("d3", "double", 3, 4, "[2,1,2]", "auto"),  # 3-deep halos, edges and corners
        ("d3", "float", 3, 3, "[1,3,1]", "auto"),
        ("per", "double", 1, 4, "[2,1,2]", "auto"),  # periodic x and z cut in 2
        ("per", "float", 2, 3, "[3,1,1]", "aggregated"),
        ("per", "double", 1, 8, "[2,2,2]", "auto"),
        ("d2", "double", 1, 2, "[1,2,1]", "auto"),
        ("d2", "float", 1, 4, "[2,2,1]", "auto"),
        ("d2", "double", 4, 3, "[3,1,1]", "aggregated"),
        ("mat", "double", 1, 3, "[1,3,1]", "auto"),  # periodic y cut in 3
        ("mat", "double", 1, 2, "[1,1,2]", "aggregated"),
        ("mat", "float", 1, 4, "[2,1,2]", "auto"),
        ("mat", "double", 2, 4, "[2,2,1]", "auto"),
    ]
    refs = {}
    for deck, prec, tb, np, ranks, io in cases:
        if np > env.max_np:
            continue
        key = (deck, prec, tb)
        sets = ["solver.precision=%s" % prec, "solver.temporal_block=%d" % tb]
        if key not in refs:
            refs[key] = fresh(env, "ref_%s_%s_%d" % key)
            env.run(0, decks[deck], refs[key], sets)
        out = fresh(env, "mpi_%s_%s_%d_np%d_%s" % (deck, prec, tb, np, (ranks or "auto")
                                                  .strip("[]").replace(",", "")))
        extra = ["parallel.io=\"%s\"" % io] + (["parallel.ranks=%s" % ranks] if ranks else [])
        env.run(np, decks[deck], out, sets + extra)
        n = same_run(os.path.join(env.work, refs[key]), os.path.join(env.work, out),
                     "%s %s k=%d on %d ranks %s %s" % (deck, prec, tb, np, ranks or "(chosen)", io))
        log("%s %s temporal_block %d, %d process%s, ranks %s, files %s: %d files and "
            "history.csv equal the one-process run" % (deck, prec, tb, np, "" if np == 1 else "es",
                                                       ranks or "chosen", io, n))
    # The summary's halo figures are the loop's: one exchange a step at
    # temporal_block 1 (the upload's and the warm-up's are not counted).
    if env.max_np >= 2:
        out = fresh(env, "mpi_summary")
        text = env.run(2, decks["d3"], out, ["solver.temporal_block=1", "parallel.ranks=[1,1,2]"],
                       quiet=False)
        m = re.search(r"halo exchange: (\d+) exchanges", text)
        if not m or int(m.group(1)) != 37:
            raise Failure("d3 on 2 ranks, 37 steps: the summary should count 37 halo exchanges, "
                          "got %s:\n%s" % (m.group(1) if m else "no halo line", text))
        log("d3 on 2 ranks: the summary counts the loop's 37 exchanges")
        # --gpu-views: the ranks walk the CUDA backend's geometry (the
        # summary's transport says so), not the CPU's own.
        if env.gpu_views and env.backend == "cpu":
            # fused views where steps are fused (temporal_block 2)
            text = env.run(2, decks["d3"], fresh(env, "mpi_views"),
                           ["solver.temporal_block=2", "parallel.ranks=[1,1,2]"], quiet=False)
            want = "HEAT_TEST_GPU_VIEWS: %s" % env.gpu_views
            if want not in text:
                raise Failure("--gpu-views %s: the summary does not say the ranks walked the "
                              "CUDA backend's views (%s):\n%s" % (env.gpu_views, want, text))
            log("the ranks walked the CUDA backend's views (%s)" % want)


def test_restart(env):
    deck = env.write("rs.cfg", DECK3 % {"name": "rs"})
    full = ["time.max_steps=60", "output.checkpoint_every=20"]
    half = ["time.max_steps=40", "output.checkpoint_every=20"]
    ref = fresh(env, "rs_ref")
    env.run(0, deck, ref, full)
    for first, then in ((4, 3), (0, 4)):
        out = fresh(env, "rs_%d_%d" % (first, then))
        env.run(first, deck, out, half)
        text = env.run(then, deck, out, full, ["--restart", "latest"])
        n = same_run(os.path.join(env.work, ref), os.path.join(env.work, out),
                     "restart %d -> %d ranks" % (first or 1, then))
        log("checkpointed on %d rank%s, continued on %d: %d files and history.csv equal the "
            "one-process run" % (first or 1, "" if first <= 1 else "s", then, n))
    # A checkpoint of 3 ranks continued on 2 with the deck it holds (no deck given).
    out = fresh(env, "rs_file")
    env.run(3, deck, out, half)
    ckpt = os.path.join(out, "rs_ckpt_00000040.vtkhdf")
    c = [env.mpiexec, env.np_flag, "2", env.heat, "run", "--restart", ckpt, "--quiet",
         "--set", 'output.dir="%s"' % out, "--set", full[0]]
    for x in env.sets:
        c += ["--set", x]
    p = subprocess.run(c, cwd=env.work, env=env.env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
    if p.returncode != 0:
        raise Failure("%s: exit status %d\n%s" % (" ".join(c), p.returncode, p.stdout))
    n = same_run(os.path.join(env.work, ref), os.path.join(env.work, out),
                 "restart 3 -> 2 ranks from the file's own deck")
    log("checkpointed on 3 ranks, continued on 2 with the deck the file holds: %d files equal"
        % n)


def run_pids(env, deck):
    """The heat processes of a run of `deck`: their command line starts with
    this heat and names the deck (the launcher's own starts otherwise; a
    launcher may start them as children or grandchildren)."""
    pattern = "^%s run %s " % (re.escape(env.heat), re.escape(deck))
    return [int(x) for x in subprocess.run(["pgrep", "-f", pattern], stdout=subprocess.PIPE,
                                           universal_newlines=True).stdout.split()]


def end_run(p, pids):
    """Ends what is left of a failed test's run, launcher and ranks, so that
    nothing outlives the test; returns what the launcher printed."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    p.kill()
    try:
        return p.communicate(timeout=30)[0] or ""
    except subprocess.TimeoutExpired:
        return ""


def continue_as_uninterrupted(env, deck, out, sets, end, name, what):
    """Continues the run in `out` (`sets[1]` its step limit) with --restart
    latest on 2 ranks to step `end`; its checkpoint there must equal an
    uninterrupted one-process run's, history.csv too. Returns `end`."""
    stop = sets[:1] + ["time.max_steps=%d" % end] + sets[2:]
    env.run(2, deck, out, stop, ["--restart", "latest"])
    ref = fresh(env, name + "_ref")
    env.run(0, deck, ref, stop)
    same_run(os.path.join(env.work, ref), os.path.join(env.work, out), what,
             files=["%s_ckpt_%08d.vtkhdf" % (name, end)])
    return end


def signal_one_rank(env, deck, out, sets, ready, settle, sig, what, limit, at=None):
    """Runs `deck` on 3 ranks; once ready() (within 120 s) and `settle`
    seconds more, sends `sig` to one rank (the middle pid: not rank 0's
    process necessarily) and waits up to `limit` s for the run to end.
    Returns the launcher's process, its output and the ranks' pids; appends
    the moment of the signal to `at`. Ends the run on every failure."""
    p = subprocess.Popen(env.cmd(3, deck, out, sets), cwd=env.work, env=env.env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True)
    deadline = time.time() + 120
    while p.poll() is None and time.time() < deadline and not ready():
        time.sleep(0.05)
    time.sleep(settle)
    ranks = run_pids(env, deck)
    if len(ranks) != 3 or p.poll() is not None:
        text = end_run(p, ranks)
        raise Failure("%s: expected the run's 3 heat processes under way, found %s (exit "
                      "status %s)\n%s" % (what, ranks, p.returncode, text))
    try:
        os.kill(sorted(ranks)[1], sig)
    except ProcessLookupError:
        text = end_run(p, ranks)
        raise Failure("%s: rank process %d ended before the signal\n%s"
                      % (what, sorted(ranks)[1], text))
    if at is not None:
        at.append(time.time())
    try:
        text, _ = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        end_run(p, ranks)
        raise Failure("%s: the run went on for %d s after the signal to one of its ranks"
                      % (what, limit))
    return p, text, ranks


def test_signal(env):
    deck = env.write("sg.cfg", DECK3 % {"name": "sg"})
    sets = ["grid.points=[64, 48, 40]", "time.max_steps=200000", "output.every=0",
            "output.checkpoint_every=0", "steady.check_every=50"]
    out = fresh(env, "sg")
    # Once the run is under way (its first snapshot is written), SIGTERM one
    # rank, as a batch system might.
    first = os.path.join(env.work, out, "sg_00000000.vtkhdf")
    p, text, _ = signal_one_rank(env, deck, out, sets, lambda: os.path.exists(first), 1.0,
                                 signal.SIGTERM, "signal", 120)
    if p.returncode != 143:
        raise Failure("signal: exit status %d, expected 143\n%s" % (p.returncode, text))
    if text.count("stopped by SIGTERM") != 1:
        raise Failure("signal: 'stopped by SIGTERM' should appear once:\n%s" % text)
    ckpts = sorted(n for n in os.listdir(os.path.join(env.work, out)) if "_ckpt_" in n)
    if len(ckpts) != 1:
        raise Failure("signal: expected one checkpoint, found %s" % ckpts)
    step = int(ckpts[0].split("_")[-1].split(".")[0])
    log("SIGTERM to one of 3 ranks: every rank stopped at step %d, exit 143, one checkpoint"
        % step)
    end = continue_as_uninterrupted(env, deck, out, sets, step + 50, "sg", "signal, continued")
    log("continued on 2 ranks to step %d: equal to an uninterrupted one-process run" % end)


def test_fail(env):
    deck = env.write("fl.cfg", DECK3 % {"name": "fl"})
    for io in ("collective", "aggregated"):
        out = fresh(env, "fl_" + io)
        e = dict(env.env)
        e.update({"HEAT_TEST_FAIL_WRITE": "3", "HEAT_TEST_FAIL_RANK": "1"})
        # A serial HDF5 refuses collective files as a deck error (exit 2).
        text = env.run(3, deck, out, ["parallel.io=\"%s\"" % io, "parallel.ranks=[1,3,1]"],
                       expect=(1, 2) if io == "collective" else 1, env=e)
        if "collective" == io and "needs a parallel HDF5" in text:
            log("collective files: not available in this build (serial HDF5); their cases, an "
                "injected write error and a full disk, not run")
            continue
        msgs = [l for l in text.splitlines() if l.startswith("heat: ")]
        if len(msgs) != 1 or "rank 1" not in msgs[0] or "injected failure" not in msgs[0]:
            raise Failure("fail (%s): expected one message naming rank 1 and the injected "
                          "failure, got:\n%s" % (io, text))
        files = sorted(os.listdir(os.path.join(env.work, out)))
        if any(n.endswith(".tmp") for n in files):
            raise Failure("fail (%s): a temporary file was left: %s" % (io, files))
        # Writes 1 and 2 (snapshot 0, snapshot 10) are complete; the third
        # (snapshot 15... here the checkpoint of step 15) is not there.
        for n in ("fl_00000000.vtkhdf", "fl_00000010.vtkhdf"):
            if n not in files:
                raise Failure("fail (%s): %s should have been written before the failure: %s"
                              % (io, n, files))
            read_field(os.path.join(env.work, out, n))
        if any("ckpt" in n for n in files):
            raise Failure("fail (%s): the failed checkpoint exists: %s" % (io, files))
        log("write error injected on rank 1 (%s files): every rank exit 1, '%s'"
            % (io, msgs[0]))
        if io != "collective":
            continue
        # A full disk: HDF5 fails its collective calls on the ranks that
        # write and leaves the others waiting, so the space is checked first.
        out = fresh(env, "fl_full")
        e = dict(env.env)
        e.update({"HEAT_TEST_FREE_BYTES": "1000"})
        text = env.run(3, deck, out, ["parallel.io=\"collective\"", "parallel.ranks=[1,3,1]"],
                       expect=1, env=e)
        msgs = [l for l in text.splitlines() if l.startswith("heat: ")]
        if len(msgs) != 1 or "No space left on device (the file needs up to" not in msgs[0]:
            raise Failure("fail (full disk): expected one message saying the space is short, "
                          "got:\n%s" % text)
        files = sorted(os.listdir(os.path.join(env.work, out)))
        if any(n.endswith(".tmp") or n.endswith(".vtkhdf") for n in files):
            raise Failure("fail (full disk): no file should be left: %s" % files)
        log("a disk too full for a collective file: every rank exit 1, '%s'" % msgs[0])
    file_size_limit(env)
    kill_one_rank(env)


def file_size_limit(env):
    """A write past the file size limit (ulimit -f, as batch systems set it;
    to the writing rank what a full disk is): every rank ends with exit 1,
    the file named once with the reason, no temporary file, the checkpoint
    before intact. A collective file is refused before it is made: a
    collective write cannot fail half-way without a hang."""
    import resource
    limit = 8 << 20  # the launcher's own files (PMIx) need a few MB

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    deck = env.write("fz.cfg", DECK3 % {"name": "fz"})
    for io in ("aggregated", "collective"):
        out = fresh(env, "fz_" + io)
        sets = ["grid.points=[128, 96, 88]",  # files of about 12 MB
                "parallel.io=\"%s\"" % io, "parallel.ranks=[1,3,1]"]
        text = env.run(3, deck, out, sets + ["time.max_steps=16"],
                       expect=(0, 2) if io == "collective" else 0)
        if "needs a parallel HDF5" in text:
            log("file size limit: collective files not available in this build (serial HDF5)")
            continue
        c = env.cmd(3, deck, out, sets + ["time.max_steps=40"], ["--restart", "latest"])
        p = subprocess.run(c, cwd=env.work, env=env.env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True, timeout=300,
                           preexec_fn=limited)
        msgs = [l for l in p.stdout.splitlines() if l.startswith("heat: ")]
        if p.returncode != 1 or len(msgs) != 1 or "fz_00000020.vtkhdf" not in msgs[0] or \
                os.strerror(errno.EFBIG) not in msgs[0]:
            raise Failure("file size limit (%s files): expected exit status 1 and one message "
                          "naming fz_00000020.vtkhdf and '%s', got %d:\n%s"
                          % (io, os.strerror(errno.EFBIG), p.returncode, p.stdout))
        d = os.path.join(env.work, out)
        files = sorted(os.listdir(d))
        if any(n.endswith(".tmp") for n in files) or "fz_00000020.vtkhdf" in files:
            raise Failure("file size limit (%s files): a temporary or partial file was left: %s"
                          % (io, files))
        ckpt = os.path.join(d, "fz_ckpt_00000016.vtkhdf")
        if read_field(ckpt)[1] != 16:
            raise Failure("file size limit (%s files): %s is not step 16" % (io, ckpt))
        info = subprocess.run([env.heat, "info", ckpt], env=env.env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
        if info.returncode != 0:
            raise Failure("file size limit: heat info %s: exit status %d\n%s"
                          % (ckpt, info.returncode, info.stdout))
        log("a file size limit below the file (%s files): every rank exit 1, '%s'; the "
            "checkpoint before it whole" % (io, msgs[0]))


def kill_one_rank(env):
    """A rank that dies (SIGKILL, as a node lost or the out-of-memory
    killer): the run ends without hanging, the launcher says a rank was
    killed, every file under its final name is whole, and `--restart latest`
    continues to the same bits as a run never interrupted. (Whether the kill
    lands while a checkpoint is being written is chance; tests/kill_restart.py
    kills one process at many random moments.)"""
    deck = env.write("kl.cfg", DECK3 % {"name": "kl"})
    sets = ["grid.points=[64, 48, 40]", "time.max_steps=200000", "output.every=0",
            "output.checkpoint_every=200", "steady.check_every=50"]
    out = fresh(env, "kl")
    d = os.path.join(env.work, out)
    # Once two checkpoints are there, kill one rank while the run goes on.
    killed = []
    p, text, _ = signal_one_rank(
        env, deck, out, sets,
        lambda: os.path.isdir(d) and len([n for n in os.listdir(d) if "_ckpt_" in n]) >= 2,
        0.1, signal.SIGKILL, "kill", 60, killed)
    took = time.time() - killed[0]
    left = run_pids(env, deck)
    if left:
        end_run(p, left)
        raise Failure("kill: heat processes %s still ran after the launcher ended" % left)
    if p.returncode == 0:
        raise Failure("kill: exit status 0 after a rank was killed\n%s" % text)
    if not re.search(r"signal[: ]+9", text, re.I):
        raise Failure("kill: the launcher's output does not say a rank was killed (signal 9):\n%s"
                      % text)
    names = sorted(n for n in os.listdir(d) if n.endswith(".vtkhdf"))
    for n in names:
        read_field(os.path.join(d, n))
    ckpts = [n for n in names if "_ckpt_" in n]
    if not ckpts:
        raise Failure("kill: no checkpoint left in %s" % d)
    info = subprocess.run([env.heat, "info", os.path.join(d, ckpts[-1])], env=env.env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=120)
    if info.returncode != 0:
        raise Failure("kill: heat info %s: exit status %d\n%s"
                      % (ckpts[-1], info.returncode, info.stdout))
    tmp = [n for n in os.listdir(d) if n.endswith(".tmp")]
    step = int(ckpts[-1].split("_")[-1].split(".")[0])
    log("SIGKILL to one of 3 ranks: the run ended %.1f s later (exit status %d), the launcher "
        "said so; newest checkpoint step %d, whole; %d temporary file(s) left"
        % (took, p.returncode, step, len(tmp)))
    end = continue_as_uninterrupted(env, deck, out, sets, step + 100, "kl",
                                    "killed rank, continued")
    log("continued with --restart latest on 2 ranks to step %d: equal to an uninterrupted "
        "one-process run, no temporary file left" % end)


def test_badsplit(env):
    deck = env.write("bs.cfg", DECK3 % {"name": "bs"})
    cases = [(3, ["parallel.ranks=[2,2,1]"], "4 ranks, but this run has 3 processes"),
             (2, ["parallel.ranks=[1,1,20]"], "20 ranks along z, which has only 13 points"),
             (3, ["parallel.ranks=[1,3,1]", "solver.temporal_block=8"],
              "fewer than the 8 halo layers"),
             (4, ["grid.points=[23, 17, 1]", "parallel.ranks=[1,1,4]"], "pz must be 1")]
    for np, sets, want in cases:
        out = fresh(env, "bs")
        text = env.run(np, deck, out, sets, expect=2)
        if text.count(want) != 1:
            raise Failure("badsplit %s: the message '%s' should appear once:\n%s"
                          % (sets, want, text))
        if os.path.exists(os.path.join(env.work, out)):
            raise Failure("badsplit %s: %s was created" % (sets, out))
        log("%d processes, %s: exit 2 on every rank, '%s' once, nothing written"
            % (np, " ".join(sets), want))
    # heat check shows the split, with --ranks N or under the launcher, once.
    def check(cmd, expect):
        p = subprocess.run(cmd, cwd=env.work, env=env.env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
        if p.returncode not in (expect if isinstance(expect, tuple) else (expect,)):
            raise Failure("%s: exit status %d, expected %s\n%s"
                          % (" ".join(cmd), p.returncode, expect, p.stdout))
        return p.stdout
    text = check([env.heat, "check", deck, "--ranks", "4"], 0)
    rows = [l for l in text.splitlines() if l.startswith("  ") and "(" in l and " x " in l]
    if "= 4 ranks" not in text or len(rows) != 4 or "per rank: memory" not in text:
        raise Failure("heat check --ranks 4: expected the split and 4 rows:\n%s" % text)
    text = check([env.mpiexec, env.np_flag, "3", env.heat, "check", deck], 0)
    if text.count("= 3 ranks") != 1 or text.count("deck %s: valid" % deck) != 1:
        raise Failure("mpiexec -n 3 heat check: expected the split of 3 ranks once:\n%s" % text)
    text = check([env.heat, "check", deck, "--ranks", "5000"], 2)
    if "5000 processes do not fit grid.points = [23, 17, 13]" not in text:
        raise Failure("heat check --ranks 5000: expected the split refused:\n%s" % text)
    # Multigrid under the launcher: the split, and how its levels are held, once.
    want = "multigrid: each rank holds its box of the fine levels"
    text = check([env.mpiexec, env.np_flag, "2", env.heat, "check", deck, "--set",
                  'steady.method="multigrid"'], 0)
    if text.count(want) != 1 or text.count("= 2 ranks") != 1:
        raise Failure("mpiexec -n 2 heat check (multigrid): expected the split and '%s' once:\n%s"
                      % (want, text))
    # heat bench --multigrid times the whole grid in one process: refused under the launcher.
    want = "heat bench --multigrid: one process only"
    text = check([env.mpiexec, env.np_flag, "2", env.heat, "bench", "--multigrid", "--backend",
                  "cpu", "--size", "17x17x17", "--runs", "3"], 2)
    if text.count(want) != 1:
        raise Failure("mpiexec -n 2 heat bench --multigrid: expected '%s' once:\n%s"
                      % (want, text))
    log("heat check: the split of 4 ranks with each rank's box, memory and halos; of 3 under "
        "the launcher, printed once; 5000 ranks refused with exit 2; multigrid under the "
        "launcher: the split and its levels, said once; bench --multigrid refused under it")


def test_paraview(env):
    if not env.pvpython or not os.path.exists(env.pvpython):
        raise Failure("paraview: pvpython was not found when cmake ran: install Debian's "
                      "python3-paraview (tools/quickstart.sh), then configure again")
    deck = env.write("pv4.cfg", (DECK3 % {"name": "pv4"}).replace(
        "time = { max_steps = 37; };", "time = { max_steps = 70; };").replace(
        "every = 10; checkpoint_every = 15;", "every = 20; checkpoint_every = 25;").replace(
        'solver = { backend = "cpu"; };', 'solver = { backend = "cpu"; precision = "float"; };')
        # The checker takes spacing = length / (n - 1): no periodic axis here.
        .replace('y_lo = { type = "periodic"; };', 'y_lo = { type = "neumann"; gradient = 0.0; };')
        .replace('y_hi = { type = "periodic"; };', 'y_hi = { type = "dirichlet"; value = 3.0; };'))
    out = fresh(env, "pv4")
    env.run(4, deck, out, ["parallel.ranks=[2,1,2]"])
    # ParaView from another working directory, the run named by a relative path.
    other = os.path.join(env.work, "elsewhere")
    os.makedirs(other, exist_ok=True)
    rel = os.path.relpath(os.path.join(env.work, out), other)
    c = [env.pvpython, os.path.join(env.src, "tests", "paraview_check.py"), rel,
         "--python3", sys.executable, "--points", "23,17,13", "--length", "1.1,0.8,0.6",
         "--origin", "0.5,-1.0,2.0", "--precision", "float"]
    p = subprocess.run(c, cwd=other, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=300)
    print(p.stdout)
    if p.returncode != 0:
        raise Failure("paraview: %s failed (exit status %d)" % (" ".join(c), p.returncode))
    # And the files equal the one-process run's.
    ref = fresh(env, "pv1")
    env.run(0, deck, ref)
    same_run(os.path.join(env.work, ref), os.path.join(env.work, out), "paraview run")
    log("ParaView read every snapshot of the 4-rank run from %s; the files equal the "
        "one-process run" % other)


def test_multigrid(env):
    decks = {
        "d3": env.write("mg3.cfg", mg_deck(DECK3) % {"name": "mg3"}),
        "per": env.write("mgper.cfg", mg_deck(DECK_PERIODIC) % {"name": "mgper"}),
        "d2": env.write("mg2.cfg", mg_deck(DECK2) % {"name": "mg2"}),
        "mat": env.write("mgmat.cfg", mg_deck(DECK_MATERIALS) % {"name": "mgmat"}),
        "be": env.write("mgbe.cfg", mg_deck(DECK3, "backward_euler") % {"name": "mgbe"}),
        "matbe": env.write("mgmatbe.cfg",
                           mg_deck(DECK_MATERIALS, "backward_euler") % {"name": "mgmatbe"}),
        "matcn": env.write("mgmatcn.cfg",
                           mg_deck(DECK_MATERIALS, "crank_nicolson") % {"name": "mgmatcn"}),
        # singular: no Dirichlet or convective face, the initial mean kept
        "sing": env.write("mgsing.cfg", (mg_deck(DECK_PERIODIC) % {"name": "mgsing"}).replace(
            'y_lo = { type = "dirichlet"; value = 2.0; };',
            'y_lo = { type = "neumann"; gradient = 0.0; };').replace(
            'y_hi = { type = "neumann"; gradient = 0.25; };',
            'y_hi = { type = "neumann"; gradient = 0.0; };')),
    }
    deep = dict(env.env, HEAT_TEST_MG_GATHER="0")
    # (deck, precision, processes, parallel.ranks, levels split as deep as they go)
    cases = [
        ("d3", "double", 2, "[2,1,1]", True),
        ("d3", "double", 2, "[1,1,2]", True),
        ("d3", "double", 3, "[1,3,1]", True),  # periodic y cut in 3
        ("d3", "double", 8, "[2,2,2]", True),
        ("d3", "float", 4, "[1,2,2]", True),
        ("d3", "double", 4, "[2,1,2]", False),  # the gathering a run does
        ("per", "double", 4, "[2,1,2]", True),  # periodic x and z cut in 2
        ("d2", "double", 4, "[2,2,1]", True),
        ("d2", "float", 3, "[3,1,1]", True),
        ("mat", "double", 3, "[1,1,3]", True),
        ("mat", "float", 4, "[2,2,1]", True),
        ("be", "double", 4, "[2,1,2]", True),
        ("matbe", "double", 4, "[2,2,1]", True),
        ("matbe", "float", 2, "[1,2,1]", True),
        ("matcn", "double", 3, "[3,1,1]", True),
        ("matcn", "double", 2, "[1,1,2]", False),
        ("sing", "double", 4, "[2,1,2]", True),  # the kept mean: an exact sum
        ("sing", "float", 3, "[1,3,1]", True),
    ]
    refs = {}
    for deck, prec, np, ranks, split_deep in cases:
        if np > env.max_np:
            continue
        sets = ["solver.precision=%s" % prec]
        if (deck, prec) not in refs:
            refs[(deck, prec)] = fresh(env, "mgref_%s_%s" % (deck, prec))
            env.run(0, decks[deck], refs[(deck, prec)], sets)
        out = fresh(env, "mg_%s_%s_np%d_%s_%d" % (deck, prec, np, ranks.strip("[]").replace(
            ",", ""), split_deep))
        env.run(np, decks[deck], out, sets + ["parallel.ranks=%s" % ranks],
                env=deep if split_deep else None)
        n = same_run(os.path.join(env.work, refs[(deck, prec)]), os.path.join(env.work, out),
                     "multigrid %s %s on %d ranks %s" % (deck, prec, np, ranks))
        log("multigrid %s %s, %d processes, ranks %s, levels split %s: %d files and "
            "history.csv equal the one-process run"
            % (deck, prec, np, ranks, "as deep as they go" if split_deep else "as a run does", n))
    # An implicit run with materials checkpointed on 3 ranks and continued on 2.
    rdeck = "matbe"
    ref = refs[(rdeck, "double")]
    out = fresh(env, "mg_restart")
    env.run(3, decks[rdeck], out, ["time.max_steps=10"], env=deep)
    env.run(2, decks[rdeck], out, [], ["--restart", "latest"], env=deep)
    # Snapshots and the last checkpoint (a run keeps only its latest ones).
    names = sorted(n for n in os.listdir(os.path.join(env.work, ref))
                   if n.endswith(".vtkhdf") and ("_ckpt_" not in n or "00000012" in n))
    n = same_run(os.path.join(env.work, ref), os.path.join(env.work, out),
                 "multigrid backward Euler checkpointed on 3 ranks, continued on 2", names)
    log("multigrid backward Euler (%s) checkpointed on 3 ranks, continued on 2: %d files equal"
        % (rdeck, n))
    # The kept mean does not depend on the threads of one process either.
    out = fresh(env, "mg_sing_threads")
    env.run(0, decks["sing"], out, ["solver.precision=double"],
            env=dict(env.env, OMP_NUM_THREADS="2"))
    n = same_run(os.path.join(env.work, refs[("sing", "double")]), os.path.join(env.work, out),
                 "multigrid singular, one process of 2 threads against 1")
    log("multigrid singular, one process: 2 threads equal 1 thread (%d files)" % n)
    # What a split cannot run: exit 2, the reason once, nothing written.
    tiny = env.write("mgtiny.cfg", (mg_deck(DECK3) % {"name": "mgtiny"}).replace(
        "points = [45, 33, 29]", "points = [9, 7, 5]"))
    for deck, words in ((tiny, "solved directly"),):
        out = fresh(env, "mg_refused")
        text = env.run(2, deck, out, [], expect=2)
        if words not in text or text.count(words) != 1:
            raise Failure("%s on 2 ranks: expected one message saying %r, got:\n%s"
                          % (deck, words, text))
        if os.path.exists(os.path.join(env.work, out)) and os.listdir(os.path.join(env.work, out)):
            raise Failure("%s on 2 ranks was refused but wrote %s"
                          % (deck, os.listdir(os.path.join(env.work, out))))
        c = [env.heat, "check", deck, "--ranks", "2"]
        p = subprocess.run(c, cwd=env.work, env=env.env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True, timeout=60)
        if p.returncode != 2 or words not in p.stdout:
            raise Failure("%s: exit status %d, expected 2 saying %r:\n%s"
                          % (" ".join(c), p.returncode, words, p.stdout))
        log("%s: refused on 2 ranks (run and check, exit 2: %r)" % (os.path.basename(deck), words))


TESTS = {"splits": test_splits, "restart": test_restart, "signal": test_signal,
         "fail": test_fail, "badsplit": test_badsplit, "paraview": test_paraview,
         "multigrid": test_multigrid}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("test", choices=sorted(TESTS))
    ap.add_argument("--heat", required=True)
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--np-flag", default="-n")
    ap.add_argument("--work", required=True)
    ap.add_argument("--pvpython", default="")
    ap.add_argument("--src", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--backend", default="cpu", choices=("cpu", "cuda", "auto"))
    ap.add_argument("--ref-backend", default="cpu", choices=("cpu", "cuda", "auto"))
    ap.add_argument("--kernel", default="")
    ap.add_argument("--max-np", type=int, default=8)
    ap.add_argument("--gpu-views", default="", choices=("", "fused", "steps"))
    a = ap.parse_args()
    try:
        import h5py  # noqa: F401
        import numpy  # noqa: F401
    except ImportError as e:
        print("%s: %s: install Debian's python3-h5py (tools/quickstart.sh)" % (PROG, e))
        return 1
    if not a.mpiexec or not os.path.exists(a.mpiexec):
        print("%s: no mpiexec was found when cmake ran: install Debian's openmpi-bin "
              "(tools/quickstart.sh)" % PROG)
        return 1
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    env = Env(a)
    try:
        TESTS[a.test](env)
    except Failure as f:
        print("%s %s: FAILED: %s" % (PROG, a.test, f))
        return 1
    except subprocess.TimeoutExpired as t:
        print("%s %s: FAILED: timed out: %s" % (PROG, a.test, t))
        return 1
    log("%s: all checks passed" % a.test)
    return 0


if __name__ == "__main__":
    sys.exit(main())

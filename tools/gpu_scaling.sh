#!/usr/bin/env bash
# Measures how heat scales over the GPUs of one host (2, 4 or 8), one rank
# per GPU, after checking that the several-GPU results are right:
#   1. build: heat with CUDA and MPI (build-gpu-scaling), unless
#      HEAT_SCALING_BUILD names a build directory that holds a `heat` binary;
#   2. correct: tests/mpi_check.py splits on the CUDA backend (up to one rank
#      per GPU; its transport is the deck's default "auto", NCCL where every
#      rank has a GPU of its own: mpi_check.py has no transport option), then
#      `heat run` on 2, 4, 8 ranks with parallel.transport "nccl" and "mpi",
#      float and double, temporal_block 1 and 3: every snapshot and checkpoint
#      field and the step, time and residual columns of history.csv equal to
#      a one-rank run bit for bit (h5py);
#   3. sanitize: compute-sanitizer memcheck on 2-rank runs (nccl and mpi,
#      float and double, temporal_block 1 and 3); reports of NCCL's own
#      probes of kernel images (error 209) are counted, not failed;
#   4. weak: 512^3 points per GPU (grid.points [512, 512, 512 N], split
#      1 x 1 x N), float and double, temporal_block 1 and "auto", transports
#      nccl and mpi, 1000 steps, the residual every 100, no output between the
#      initial and final files (output.every = 0, checkpoint_every = 0);
#   5. strong: 1024^3 float on 1, 2, 4, 8 GPUs (the split heat chooses), the
#      same variants; a size that does not fit the GPU's memory is skipped;
#   6. halo: `heat bench --backend cuda --kernel register_tiled --size
#      512x512x512` on 2, 4, 8 ranks: the halo exchange's pack, transfer and
#      unpack per step (OUTDIR/halo.txt, OUTDIR/halo_npN.json). heat bench has
#      no transport option: it takes "auto", NCCL with a GPU per rank; the
#      runs of steps 4 and 5 give the halo figures of both transports.
# The runs of steps 4 and 5 go to OUTDIR/scaling.csv, one row per run:
#   kind,ranks,points,precision,k,transport,glups,seconds,halo_not_hidden_s,
#   halo_not_hidden_pct,halo_pack_s,halo_transfer_s,halo_unpack_s,k_used,
#   split,transport_used,exit
# with k the deck's solver.temporal_block (1 or auto), k_used the steps per
# pass the run took, glups and seconds the summary's GLUP/s and loop wall
# time, and the halo columns the summary's "halo exchange" line (slowest
# rank; the time not hidden by compute and its share of the loop, pack,
# transfer, unpack). The one-rank rows have no halos: their transport is "-"
# and their halo columns are empty. A step rerun replaces its own rows, so the
# steps may run one at a time. There is no deck key for overlapping the halo
# exchange with compute (docs/DECK.md has none): the runs overlap it as heat
# does by itself, and the summary says how much of it stayed exposed.
# OUTDIR/summary.txt has one line per check or run, PASS, FAIL or INFO (each
# invocation appends to it); exit status 1 when one failed.
#
#   tools/gpu_scaling.sh [OUTDIR] [steps...]
#   steps: build correct sanitize weak strong halo (default all)
#   tools/heat_plot.py scaling OUTDIR/scaling.csv -o scaling.png
#
# Set HEAT_CUDA_ARCHS (default 90), HEAT_MPIEXEC (default mpiexec), HEAT_MPIEXEC_FLAGS
# (default --bind-to none with Open MPI),
# HEAT_SCALING_RANKS (default 1 2 4 8 up to the GPUs that nvidia-smi -L
# lists), HEAT_SCALING_BUILD (an existing build directory: no build step),
# HEAT_SCALING_PRECISIONS (weak scaling's, default "float double"),
# HEAT_SCALING_STEPS (steps of a weak or strong run, default 1000),
# HEAT_SCALING_PYTHON (a Python 3 with h5py and numpy for the correct step,
# default python3).
# Libraries that the machine lacks are taken from .device-deps/env.sh when it
# exists. HEAT_SCALING_DRYRUN=1 tries the script without a GPU: the CPU
# backend, 32^3 points per rank (64^3 for strong), ranks 1 and 2, transport
# "mpi" only, no nvidia-smi and no sanitizer; its figures mean nothing.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
src=$(pwd)
out=${1:-gpu-scaling}
shift || true
steps=${*:-build correct sanitize weak strong halo}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -f .device-deps/env.sh ]; then
  # shellcheck disable=SC1091
  . .device-deps/env.sh
fi
dry=${HEAT_SCALING_DRYRUN:-0}
precisions=${HEAT_SCALING_PRECISIONS:-float double}
steps_per_run=${HEAT_SCALING_STEPS:-1000}
archs=${HEAT_CUDA_ARCHS:-90}
mpiexec=${HEAT_MPIEXEC:-mpiexec}
# GPU ranks unbound: bound to one core each (Open MPI's default), the 2-GPU
# loop ran 2.6 times slower (docs/PERFORMANCE.md). HEAT_MPIEXEC_FLAGS replaces
# these flags (empty: none).
if [ -n "${HEAT_MPIEXEC_FLAGS+x}" ]; then
  read -ra mflags <<<"$HEAT_MPIEXEC_FLAGS"
elif "$mpiexec" --version 2>&1 | grep -q "Open MPI"; then
  mflags=(--bind-to none)
else
  mflags=()
fi
jobs=$(nproc 2>/dev/null || echo 4)
# Open MPI as root, more ranks than it counts slots for (the dry run); NCCL
# without NVLink multicast.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 NCCL_NVLS_ENABLE=0
status=0
summary=$out/summary.txt
csv=$out/scaling.csv
touch "$summary"
py=${HEAT_SCALING_PYTHON:-$(command -v python3)}

has() { [[ " $steps " == *" $1 "* ]]; }
say() { printf '\n== %s\n' "$*"; }
record() { # record NAME STATUS [DETAIL]
  printf '%-58s %-4s %s\n' "$1" "$2" "${3:-}" | tee -a "$summary"
  [ "$2" = PASS ] || [ "$2" = INFO ] || status=1
}

if [ "$dry" = 1 ]; then
  backend=cpu transports="mpi" per_rank=32 strong_n=64
  ranks_all=${HEAT_SCALING_RANKS:-1 2}
  bench_size=32x32x64
  export OMP_NUM_THREADS=1
  ngpu=0 gpu_mib=0
  build=${HEAT_SCALING_BUILD:-build-scaling-dry}
  cmake_gpu=(-DHEAT_CUDA=OFF)
else
  backend=cuda transports="nccl mpi" per_rank=512 strong_n=1024
  bench_size=512x512x512
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  if [ "$ngpu" -lt 1 ]; then
    echo "gpu_scaling.sh: nvidia-smi -L lists no GPU (HEAT_SCALING_DRYRUN=1 runs without one)" >&2
    exit 1
  fi
  # The smallest GPU's memory (MiB): a run that does not fit it is skipped.
  gpu_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | sort -n | head -1)
  ranks_all=${HEAT_SCALING_RANKS:-}
  if [ -z "$ranks_all" ]; then
    for n in 1 2 4 8; do [ "$n" -le "$ngpu" ] && ranks_all="$ranks_all $n"; done
  fi
  build=${HEAT_SCALING_BUILD:-build-gpu-scaling}
  cmake_gpu=(-DHEAT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$archs")
fi
# shellcheck disable=SC2206
ranks_all=($ranks_all)
multi=() # the rank counts above 1
for n in "${ranks_all[@]}"; do [ "$n" -gt 1 ] && multi+=("$n"); done

say "machine ($out/machine.txt)"
{
  if [ "$dry" = 1 ]; then
    echo "dry run: CPU backend, no GPU"
  else
    nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
  fi
  "$mpiexec" --version 2>&1 | head -2
  echo "ranks: ${ranks_all[*]}; transports: $transports"
} | tee "$out/machine.txt"

if has build && [ -x "${HEAT_SCALING_BUILD:-/nonexistent}/heat" ]; then
  record "build: $build/heat given (HEAT_SCALING_BUILD)" INFO
elif has build; then
  say "build: $build (${cmake_gpu[*]}, MPI)"
  if cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${cmake_gpu[@]}" -DHEAT_MPI=ON \
    -DHEAT_BUILD_TESTS=OFF >"$out/configure.log" 2>&1 &&
    cmake --build "$build" -j"$jobs" --target heat >"$out/build.log" 2>&1; then
    record "build (${cmake_gpu[*]}, MPI)" PASS \
      "$(grep -hE 'heat: (MPI|NCCL|no NCCL)' "$out/configure.log" | sed 's/^-- //' | tr '\n' ' ')"
  else
    record "build" FAIL "see $out/configure.log, $out/build.log"
    tail -n 40 "$out/configure.log" "$out/build.log"
    exit 1
  fi
fi
case $build in /*) heat=$build/heat ;; *) heat=$src/$build/heat ;; esac
if [ ! -x "$heat" ]; then
  echo "gpu_scaling.sh: no $heat (run the build step, or set HEAT_SCALING_BUILD)" >&2
  exit 1
fi
"$heat" --version | tee -a "$out/machine.txt"

# The correctness deck: awkward sizes, every face type, periodic y cut
# across ranks, snapshots and checkpoints on the way.
cat >"$out/correct.cfg" <<EOF
name = "correct";
grid = { points = [45, 38, 67]; length = [1.1, 0.9, 1.4]; };
material = { diffusivity = 1.0; };
time = { max_steps = 37; };
steady = { tolerance = 1e-12; check_every = 5; };
initial = { type = "gaussian"; center = [0.4, 0.3, 0.8]; width = 0.2; amplitude = 3.0; base = 0.5; };
boundary = {
  x_lo = { type = "dirichlet"; value = 1.0; }; x_hi = { type = "neumann"; gradient = 0.5; };
  y_lo = { type = "periodic"; }; y_hi = { type = "periodic"; };
  z_lo = { type = "neumann"; gradient = -1.0; }; z_hi = { type = "dirichlet"; value = 0.0; };
};
output = { every = 10; checkpoint_every = 15; };
solver = { backend = "$backend"; };
EOF

# same_fields REF DIR: every .vtkhdf field and history.csv's step, time and
# residual columns of DIR equal to REF's, bit for bit.
same_fields() {
  "$py" - "$1" "$2" <<'EOF'
import csv, glob, os, sys
import h5py
ref, got = sys.argv[1], sys.argv[2]
files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ref, "*.vtkhdf")))
if not files:
    sys.exit("no .vtkhdf file in %s" % ref)
for name in files:
    p = os.path.join(got, name)
    if not os.path.exists(p):
        sys.exit("%s: missing" % p)
    a = h5py.File(os.path.join(ref, name), "r")["VTKHDF/PointData/temperature"][()]
    b = h5py.File(p, "r")["VTKHDF/PointData/temperature"][()]
    if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
        sys.exit("%s: the field differs from the one-rank run's" % name)
def hist(d):
    with open(os.path.join(d, "history.csv")) as f:
        return [r[:3] for r in csv.reader(f) if len(r) > 2 and r[2].strip()]
if hist(ref) != hist(got):
    sys.exit("history.csv: step, time or residual differs from the one-rank run's")
print("equal: %d files and history.csv" % len(files))
EOF
}

if has correct && ! "$py" -c 'import h5py, numpy' 2>/dev/null; then
  record "correct: $py lacks h5py or numpy (set HEAT_SCALING_PYTHON)" FAIL
elif has correct; then
  say "correct: tests/mpi_check.py splits, $backend backend"
  maxnp=${ranks_all[-1]}
  log=$out/mpi_check_splits.log
  if "$py" tests/mpi_check.py splits --heat "$heat" --mpiexec "$(command -v "$mpiexec")" \
    --work "$out/work_splits" --backend "$backend" --max-np "$maxnp" >"$log" 2>&1; then
    record "mpi_check splits ($backend, up to $maxnp ranks)" PASS \
      "$(grep -c 'equal' "$log") comparisons, bit for bit"
  else
    record "mpi_check splits ($backend, up to $maxnp ranks)" FAIL \
      "$(grep -m1 FAILED "$log" | cut -c1-200)"
  fi
  rm -rf "$out/work_splits"
  say "correct: ${multi[*]} ranks against one, transports $transports"
  for p in float double; do
    for tb in 1 3; do
      ref=$out/correct_ref_${p}_$tb
      rm -rf "$ref"
      if ! "$mpiexec" ${mflags[@]+"${mflags[@]}"} -n 1 "$heat" run "$out/correct.cfg" --quiet --set "output.dir=\"$ref\"" \
        --set "solver.precision=\"$p\"" --set "solver.temporal_block=$tb" \
        >"$out/correct_ref_${p}_$tb.log" 2>&1; then
        record "one-rank reference, $p k=$tb" FAIL "see $out/correct_ref_${p}_$tb.log"
        continue
      fi
      for tr in $transports; do
        for n in "${multi[@]}"; do
          tag=${p}_${tb}_${tr}_$n
          rm -rf "$out/correct_$tag"
          if "$mpiexec" ${mflags[@]+"${mflags[@]}"} -n "$n" "$heat" run "$out/correct.cfg" --quiet \
            --set "output.dir=\"$out/correct_$tag\"" --set "solver.precision=\"$p\"" \
            --set "solver.temporal_block=$tb" --set "parallel.transport=\"$tr\"" \
            >"$out/correct_$tag.log" 2>&1 &&
            same_fields "$ref" "$out/correct_$tag" >>"$out/correct_$tag.log" 2>&1; then
            record "$n ranks, $tr, $p k=$tb against one rank" PASS "$(tail -1 "$out/correct_$tag.log")"
            rm -f "$out/correct_$tag.log"
          else
            record "$n ranks, $tr, $p k=$tb against one rank" FAIL \
              "$(tail -1 "$out/correct_$tag.log" | cut -c1-160)"
          fi
          rm -rf "$out/correct_$tag"
        done
      done
      rm -rf "$ref"
    done
  done
fi

if has sanitize && [ "$dry" = 1 ]; then
  record "sanitize: skipped (dry run)" INFO
elif has sanitize && [ "${#multi[@]}" = 0 ]; then
  record "sanitize: skipped (one GPU)" INFO
elif has sanitize; then
  say "sanitize: compute-sanitizer memcheck, 2 ranks"
  # NCCL's set-up asks for the attributes of its kernels for every
  # architecture it was built for (cudaFuncGetAttributes); those this GPU
  # cannot run answer "no kernel image" (error 209), which NCCL expects, and
  # memcheck reports each as an API error. nccl_probes LOGS prints how many
  # such reports, whose backtrace is in libnccl, the logs hold when they hold
  # nothing else, and nothing when they hold another report or when the
  # logs' summaries count more errors than they print (past memcheck's
  # print limit: a report not printed could be anything).
  nccl_probes() {
    awk '
      /^========= COMPUTE-SANITIZER/ { next }
      /^========= ERROR SUMMARY: [0-9]+ error/ { counted += $4; next }
      /^========= [^ ]/ {
        done_record(); open = 1; nccl = 0
        probe = /cudaErrorNoKernelImageForDevice/ && /cudaFuncGetAttributes/; next
      }
      open && /libnccl[.]so/ { nccl = 1 }
      function done_record() { if (open) { if (probe && nccl) n++; else other++ } open = 0 }
      END { done_record(); if (!other && counted == n) print n + 0 }
    ' "$@"
  }
  : >"$out/sanitize.log"
  for tr in $transports; do
    for p in float double; do
      for tb in 1 3; do
        tag=${tr}_${p}_$tb
        rm -rf "$out/san_$tag"
        rm -f "$out"/san_"${tag}"_*.log "$out/san_$tag.out"
        "$mpiexec" ${mflags[@]+"${mflags[@]}"} -n 2 compute-sanitizer --tool memcheck --error-exitcode 9 \
          --log-file "$out/san_${tag}_%p.log" "$heat" run "$out/correct.cfg" --quiet \
          --set "solver.precision=\"$p\"" --set "solver.temporal_block=$tb" \
          --set "parallel.transport=\"$tr\"" --set "output.dir=\"$out/san_$tag\"" \
          >"$out/san_$tag.out" 2>&1
        rc=$?
        # memcheck's exit status 9 hides heat's own: a run that reported
        # only NCCL's probes passes when heat printed no error ("heat: ...").
        probes=$(nccl_probes "$out"/san_"${tag}"_*.log)
        if [ "$rc" = 0 ] || { [ "$rc" = 9 ] && [ "${probes:-0}" -gt 0 ] &&
          ! grep -q '^heat: ' "$out/san_$tag.out"; }; then
          note=""
          [ "$rc" = 9 ] && note=" ($probes reports of NCCL's kernel-image probes, ignored)"
          echo "ok   memcheck $tr $p k=$tb$note" >>"$out/sanitize.log"
          rm -f "$out"/san_"${tag}"_*.log "$out/san_$tag.out"
        else
          echo "FAIL memcheck $tr $p k=$tb (logs $out/san_${tag}_*.log)" >>"$out/sanitize.log"
        fi
        rm -rf "$out/san_$tag"
      done
    done
  done
  fails=$(grep -c '^FAIL' "$out/sanitize.log")
  if [ "$fails" = 0 ]; then
    record "compute-sanitizer memcheck, 2 ranks" PASS "$(grep -c '^ok' "$out/sanitize.log") runs clean"
  else
    record "compute-sanitizer memcheck, 2 ranks" FAIL "$fails runs, see $out/sanitize.log"
  fi
fi

# The measuring deck: tools/loop.cfg, its size, steps and backend set per run.
cp tools/loop.cfg "$out/scaling.cfg"
header=kind,ranks,points,precision,k,transport,glups,seconds,halo_not_hidden_s,halo_not_hidden_pct,halo_pack_s,halo_transfer_s,halo_unpack_s,k_used,split,transport_used,exit
# A step's rows replace the ones an earlier run of it wrote.
drop_rows() { # drop_rows KIND
  if [ -s "$csv" ]; then
    grep -v "^$1," "$csv" >"$csv.tmp"
    mv "$csv.tmp" "$csv"
  fi
}
[ -s "$csv" ] || echo "$header" >"$csv"

# fits NX NY NZ PRECISION RANKS: two copies of each rank's part, and 1 GiB
# to spare, within the smallest GPU's memory (always in the dry run).
fits() {
  [ "$dry" = 1 ] && return 0
  local vs=4
  [ "$4" = double ] && vs=8
  awk -v n="$(($1 * $2 * $3))" -v vs="$vs" -v r="$5" -v m="$gpu_mib" \
    'BEGIN { exit !(2 * n * vs / r / 1048576 + 1024 <= m) }'
}

# measure KIND NX NY NZ PRECISION K TRANSPORT RANKS [--set ...]: one run, one
# row of scaling.csv from its summary.
measure() {
  local kind=$1 nx=$2 ny=$3 nz=$4 p=$5 k=$6 tr=$7 n=$8
  shift 8
  local tag=${kind}_${n}_${p}_k${k}_$tr
  local log=$out/$tag.log dir=$out/run_$tag
  local pts=${nx}x${ny}x${nz}
  if ! fits "$nx" "$ny" "$nz" "$p" "$n"; then
    record "$kind $n ranks $pts $p k=$k $tr" INFO "skipped: does not fit $gpu_mib MiB"
    return
  fi
  local kset=$k sets=()
  [ "$k" = auto ] && kset='"auto"'
  [ "$tr" != - ] && sets+=(--set "parallel.transport=\"$tr\"")
  rm -rf "$dir"
  "$mpiexec" ${mflags[@]+"${mflags[@]}"} -n "$n" "$heat" run "$out/scaling.cfg" --overwrite --set "output.dir=\"$dir\"" \
    --set "grid.points=[$nx, $ny, $nz]" --set "grid.length=[1.0, $((ny / nx)).0, $((nz / nx)).0]" \
    --set "time.max_steps=$steps_per_run" --set "solver.backend=\"$backend\"" \
    --set "solver.precision=\"$p\"" --set "solver.temporal_block=$kset" "${sets[@]}" "$@" \
    >"$log" 2>&1
  local rc=$?
  rm -rf "$dir"
  local glups secs hid hidp pk trn unp ku split used
  glups=$(grep -oE '[0-9.]+ GLUP/s' "$log" | tail -1 | cut -d' ' -f1)
  secs=$(sed -nE 's/.*, wall ([0-9.]+) s, .*GLUP\/s.*/\1/p' "$log" | tail -1)
  hid=$(sed -nE 's/.*not hidden by compute ([0-9.]+) s = .*/\1/p' "$log")
  hidp=$(sed -nE 's/.*not hidden by compute [0-9.]+ s = ([0-9.]+)%.*/\1/p' "$log")
  pk=$(sed -nE 's/.*pack ([0-9.]+) s, transfer.*/\1/p' "$log")
  trn=$(sed -nE 's/.*transfer ([0-9.]+) s, unpack.*/\1/p' "$log")
  unp=$(sed -nE 's/.*unpack ([0-9.]+) s\).*/\1/p' "$log")
  ku=$(sed -nE 's/.*halos ([0-9]+) deep over.*/\1/p' "$log")
  [ -z "$ku" ] && ku=$(sed -nE 's/.* ([0-9]+) steps per pass.*/\1/p' "$log" | head -1)
  [ -z "$ku" ] && [ $rc = 0 ] && ku=1
  split=$(sed -nE 's/.*ranks [0-9]+, split ([0-9]+) x ([0-9]+) x ([0-9]+),.*/\1x\2x\3/p' "$log")
  used=$(sed -nE 's/.*halos [0-9]+ deep over (.*), files .*/\1/p' "$log")
  echo "$kind,$n,$pts,$p,$k,$tr,$glups,$secs,$hid,$hidp,$pk,$trn,$unp,$ku,$split,\"$used\",$rc" >>"$csv"
  if [ $rc = 0 ] && [ -n "$glups" ]; then
    record "$kind $n ranks $pts $p k=$k $tr" INFO \
      "$glups GLUP/s${hidp:+, halo not hidden $hidp%}"
  else
    record "$kind $n ranks $pts $p k=$k $tr" FAIL "exit $rc, see $log"
  fi
}

if has weak; then
  say "weak: ${per_rank}^3 points per rank, ranks ${ranks_all[*]}"
  drop_rows weak
  for p in $precisions; do
    for k in 1 auto; do
      for n in "${ranks_all[@]}"; do
        if [ "$n" = 1 ]; then
          measure weak "$per_rank" "$per_rank" "$per_rank" "$p" "$k" - 1
          continue
        fi
        for tr in $transports; do
          measure weak "$per_rank" "$per_rank" $((per_rank * n)) "$p" "$k" "$tr" "$n" \
            --set "parallel.ranks=[1, 1, $n]"
        done
      done
    done
  done
fi

if has strong; then
  say "strong: ${strong_n}^3 float, ranks ${ranks_all[*]}"
  drop_rows strong
  for k in 1 auto; do
    for n in "${ranks_all[@]}"; do
      if [ "$n" = 1 ]; then
        measure strong "$strong_n" "$strong_n" "$strong_n" float "$k" - 1
        continue
      fi
      for tr in $transports; do
        measure strong "$strong_n" "$strong_n" "$strong_n" float "$k" "$tr" "$n"
      done
    done
  done
fi

if has halo; then
  say "halo: heat bench $bench_size under ${multi[*]} ranks (transport auto)"
  : >"$out/halo.txt"
  kernel=(--kernel register_tiled)
  [ "$dry" = 1 ] && kernel=() # the CPU backend has one kernel
  for n in "${multi[@]}"; do
    {
      echo "== mpiexec -n $n heat bench --backend $backend --size $bench_size"
      "$mpiexec" ${mflags[@]+"${mflags[@]}"} -n "$n" "$heat" bench --backend "$backend" "${kernel[@]}" --size "$bench_size" \
        --precision both --temporal 1,3 --runs 10 --json "$out/halo_np$n.json" 2>&1
      echo "exit $?"
    } >>"$out/halo.txt"
    rc=$(tail -1 "$out/halo.txt" | cut -d' ' -f2)
    record "heat bench halo exchange, $n ranks" "$([ "$rc" = 0 ] && echo PASS || echo FAIL)" \
      "$out/halo.txt"
  done
  cat "$out/halo.txt"
fi

say "summary ($summary)"
cat "$summary"
exit $status

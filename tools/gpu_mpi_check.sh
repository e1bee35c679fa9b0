#!/usr/bin/env bash
# Builds heat with CUDA and MPI on a GPU machine and checks the distributed
# GPU path in one go, with several ranks sharing the machine's GPU (host
# staging), every result compared bit for bit with one process:
#   1. build: heat with CUDA and MPI (build-gpu-mpi), and without MPI
#      (build-gpu-nompi) for the throughput comparison;
#   2. tests: the mpi-labelled tests as CI runs them (CPU backend); then
#      tests/mpi_check.py with the ranks on the CUDA backend, 1 to 4 ranks on
#      the one GPU: every split against the one-process CPU run and against a
#      one-process CUDA run, the fused kernel and a step-by-step one (naive),
#      restart across rank counts, SIGTERM to one rank, a failing rank,
#      multigrid split over the ranks (finest level by the tiled and the point
#      kernels); and
#      parallel.transport = "nccl" refused clearly when ranks share a GPU;
#   3. sanitize: compute-sanitizer memcheck and racecheck on 2-rank runs (x
#      cut: aligned views; z cut; temporal_block 1 and 3; float and double),
#      and memcheck on a deck of two materials, a source, a convective and a
#      flux face (temporal_block 1 and 2);
#   4. loop: the whole loop on one rank of the MPI build against the build
#      without MPI (512^3 float, temporal_block 1 and 3; within 2%), and 2 and
#      4 ranks sharing the GPU with the share of halo time not hidden;
#   5. bench: `heat bench` on 1, 2 and 4 ranks with the halo exchange's pack,
#      transfer and unpack per step.
# Logs go to OUTDIR (default gpu-mpi-check/); OUTDIR/summary.txt has one line
# per check, PASS or FAIL, and the figures. Exit status 1 when a check failed.
#
#   tools/gpu_mpi_check.sh [OUTDIR] [steps...]
#   steps: build tests sanitize loop bench (default all)
#
# Without the build step, the builds named by HEAT_GPU_MPI_BUILD and
# HEAT_GPU_NOMPI_BUILD (default build-gpu-mpi, build-gpu-nompi) are used as
# they are: only their heat binaries are needed, and `ctest -L mpi` is left
# out where the MPI build has no tests.
#
# Set HEAT_CUDA_ARCHS (default 90), HEAT_MPIEXEC (default mpiexec). Libraries
# that the machine lacks are taken from .device-deps/env.sh when it exists.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
src=$(pwd)
out=${1:-gpu-mpi-check}
shift || true
steps=${*:-build tests sanitize loop bench}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -f .device-deps/env.sh ]; then
  # shellcheck disable=SC1091
  . .device-deps/env.sh
fi
build=${HEAT_GPU_MPI_BUILD:-build-gpu-mpi}
plain=${HEAT_GPU_NOMPI_BUILD:-build-gpu-nompi}
archs=${HEAT_CUDA_ARCHS:-90}
mpiexec=${HEAT_MPIEXEC:-mpiexec}
jobs=$(nproc 2>/dev/null || echo 4)
# Open MPI as root, more ranks than it counts slots for; one OpenMP thread
# per rank for the CPU runs; NCCL without NVLink multicast.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 NCCL_NVLS_ENABLE=0
status=0
summary=$out/summary.txt
: >"$summary"

has() { [[ " $steps " == *" $1 "* ]]; }
say() { printf '\n== %s\n' "$*"; }
record() { # record NAME STATUS [DETAIL]
  printf '%-58s %-4s %s\n' "$1" "$2" "${3:-}" | tee -a "$summary"
  [ "$2" = PASS ] || [ "$2" = INFO ] || status=1
}
py=$(command -v python3)

if has build; then
  say "build: $build (CUDA $archs, MPI) and $plain (CUDA, no MPI)"
  {
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    "$mpiexec" --version 2>&1 | head -2
    nvcc --version | tail -1
  } | tee "$out/machine.txt"
  if cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DHEAT_CUDA=ON -DHEAT_MPI=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$archs" -DHEAT_BUILD_TESTS="$(has tests && echo ON || echo OFF)" \
    >"$out/configure-mpi.log" 2>&1 &&
    cmake --build "$build" -j"$jobs" >"$out/build-mpi.log" 2>&1 &&
    cmake -S . -B "$plain" -DCMAKE_BUILD_TYPE=Release -DHEAT_CUDA=ON -DHEAT_MPI=OFF \
      -DCMAKE_CUDA_ARCHITECTURES="$archs" -DHEAT_BUILD_TESTS=OFF >"$out/configure-nompi.log" 2>&1 &&
    cmake --build "$plain" -j"$jobs" --target heat >"$out/build-nompi.log" 2>&1; then
    record "build (CUDA + MPI, and CUDA without MPI)" PASS \
      "$(grep -hE 'heat: (MPI|NCCL|no NCCL)' "$out/configure-mpi.log" | sed 's/^-- //' | tr '\n' ' ')"
    "$build/heat" --version | tee -a "$out/machine.txt"
  else
    record "build" FAIL "see $out/configure-*.log, $out/build-*.log"
    tail -n 40 "$out"/configure-*.log "$out"/build-*.log
    exit 1
  fi
fi
heat=$src/$build/heat
plainheat=$src/$plain/heat

# mpi_check TEST NAME [options]: tests/mpi_check.py against the MPI build.
mpi_check() {
  local t=$1 name=$2
  shift 2
  local log=$out/mpi_${name}.log
  if "$py" tests/mpi_check.py "$t" --heat "$heat" --mpiexec "$(command -v "$mpiexec")" \
    --work "$out/work_$name" "$@" >"$log" 2>&1; then
    record "mpi_check $t ($name)" PASS "$(grep -c 'equal' "$log") comparisons, bit for bit"
  else
    record "mpi_check $t ($name)" FAIL "$(grep -m1 FAILED "$log" | cut -c1-200)"
  fi
  rm -rf "$out/work_$name"
}

if has tests; then
  say "tests: the mpi label on the CPU backend (as CI runs it)"
  if [ ! -f "$build/CTestTestfile.cmake" ] || ! ctest --test-dir "$build" -N -L mpi | grep -q 'Test *#'; then
    record "ctest -L mpi (cpu backend)" INFO "$build has no tests (HEAT_BUILD_TESTS=OFF): not run"
  elif ctest --test-dir "$build" -L mpi --output-on-failure -j4 >"$out/ctest-mpi.log" 2>&1; then
    record "ctest -L mpi (cpu backend)" PASS "$(grep 'tests passed' "$out/ctest-mpi.log")"
  else
    record "ctest -L mpi (cpu backend)" FAIL "see $out/ctest-mpi.log"
  fi
  say "tests: ranks on the CUDA backend sharing the GPU (host staging)"
  mpi_check splits cuda-vs-cpu --backend cuda --ref-backend cpu --max-np 4
  mpi_check splits cuda-vs-cuda --backend cuda --ref-backend cuda --max-np 4
  mpi_check splits cuda-naive --backend cuda --kernel naive --max-np 4
  mpi_check restart cuda --backend cuda
  mpi_check signal cuda --backend cuda
  mpi_check fail cuda --backend cuda
  mpi_check multigrid cuda --backend cuda --max-np 4
  HEAT_CUDA_MG_POINT=1 mpi_check multigrid cuda-point --backend cuda --max-np 4
  # NCCL refuses two ranks on one GPU: said clearly under "nccl", a fallback under "auto".
  d=$out/nccl.cfg
  cat >"$d" <<'EOF'
name = "nccl";
grid = { points = [40, 30, 20]; length = [1.0, 1.0, 1.0]; };
material = { diffusivity = 1.0; };
time = { max_steps = 20; };
initial = { type = "gaussian"; center = [0.5, 0.5, 0.5]; width = 0.1; amplitude = 1.0; base = 0.0; };
boundary = {
  x_lo = { type = "dirichlet"; value = 1.0; }; x_hi = { type = "neumann"; gradient = 0.0; };
  y_lo = { type = "periodic"; }; y_hi = { type = "periodic"; };
  z_lo = { type = "dirichlet"; value = 0.0; }; z_hi = { type = "neumann"; gradient = 1.0; };
};
EOF
  "$mpiexec" -n 2 "$heat" run "$d" --set 'output.dir="'"$out"'/nccl_out"' \
    --set 'solver.backend="cuda"' --set 'parallel.transport="nccl"' >"$out/nccl.log" 2>&1
  rc=$?
  if [ $rc = 1 ] && grep -q "NCCL cannot run two ranks on one GPU" "$out/nccl.log"; then
    record "parallel.transport = nccl with 2 ranks on 1 GPU" PASS "refused, exit 1, reason given"
  else
    record "parallel.transport = nccl with 2 ranks on 1 GPU" FAIL "exit $rc, see $out/nccl.log"
  fi
  rm -rf "$out/nccl_out"
  "$mpiexec" -n 2 "$heat" run "$d" --set 'output.dir="'"$out"'/auto_out"' \
    --set 'solver.backend="cuda"' >"$out/auto.log" 2>&1
  rc=$?
  if [ $rc = 0 ] && grep -q "host-staged" "$out/auto.log"; then
    record "parallel.transport = auto with 2 ranks on 1 GPU" PASS \
      "$(grep -o 'halos [0-9]* deep over [^,]*, [^,]*' "$out/auto.log")"
  else
    record "parallel.transport = auto with 2 ranks on 1 GPU" FAIL "exit $rc, see $out/auto.log"
  fi
  rm -rf "$out/auto_out"
fi

if has sanitize; then
  say "compute-sanitizer on 2-rank runs"
  deck=$out/sanitize.cfg
  cat >"$deck" <<'EOF'
grid = { points = [37, 19, 11]; length = [1.0, 0.5, 0.3]; };
material = { diffusivity = 0.01; };
time = { max_steps = 13; };
steady = { tolerance = 1e-12; check_every = 4; };
initial = { type = "gaussian"; center = [0.4, 0.2, 0.1]; width = 0.1; amplitude = 1.0; base = 0.5; };
boundary = {
  x_lo = { type = "dirichlet"; value = 1.0; }; x_hi = { type = "neumann"; gradient = 0.5; };
  y_lo = { type = "periodic"; }; y_hi = { type = "periodic"; };
  z_lo = { type = "neumann"; gradient = -1.0; }; z_hi = { type = "dirichlet"; value = 0.0; };
};
output = { every = 5; };
solver = { backend = "cuda"; };
EOF
  : >"$out/sanitize.log"
  # san_run TOOL DECK WHAT PRECISION RANKS K: one 2-rank run under
  # compute-sanitizer, a line in sanitize.log (its logs kept when it fails)
  san_run() {
    local tool=$1 d=$2 what=$3 p=$4 ranks=$5 tb=$6
    local tag=${tool}_${what// /_}_${p}_${ranks//[^0-9]/}_$tb
    rm -rf "$out/san_$tag"
    if "$mpiexec" -n 2 compute-sanitizer --tool "$tool" --error-exitcode 9 \
      --log-file "$out/san_${tag}_%p.log" "$heat" run "$d" --quiet \
      --set "solver.precision=$p" --set "parallel.ranks=$ranks" \
      --set "solver.temporal_block=$tb" --set "output.dir=\"$out/san_$tag\"" \
      >"$out/san_$tag.out" 2>&1; then
      echo "ok   $tool $what$p ranks $ranks k=$tb" >>"$out/sanitize.log"
      rm -f "$out"/san_"${tag}"_*.log "$out/san_$tag.out"
    else
      echo "FAIL $tool $what$p ranks $ranks k=$tb (logs $out/san_${tag}_*.log)" >>"$out/sanitize.log"
    fi
    rm -rf "$out/san_$tag"
  }
  for tool in memcheck racecheck; do
    for p in float double; do
      for ranks in "[2,1,1]" "[1,1,2]" "[1,2,1]"; do
        for tb in 1 3; do san_run "$tool" "$deck" "" "$p" "$ranks" "$tb"; done
      done
    done
  done
  # the variable-coefficient update on GPU ranks: two materials, a source,
  # a convective and a flux face; x cut (aligned views) and z cut, fused too
  mdeck=$out/sanitize_mat.cfg
  cat >"$mdeck" <<'EOF'
grid = { points = [37, 19, 11]; length = [1.0, 0.5, 0.3]; };
materials = (
  { name = "a"; conductivity = 2.0; density = 1.0; specific_heat = 1.5; },
  { name = "b"; conductivity = 0.5; density = 2.0; specific_heat = 1.0; }
);
regions = ( { material = "b"; box = { min = [0.3, 0.0, 0.0]; max = [0.6, 0.3, 0.3]; }; } );
sources = ( { box = { min = [0.1, 0.1, 0.1]; max = [0.3, 0.3, 0.2]; }; power_density = 5.0; } );
time = { max_steps = 13; };
steady = { tolerance = 1e-12; check_every = 4; };
initial = { type = "gaussian"; center = [0.4, 0.2, 0.1]; width = 0.1; amplitude = 1.0; base = 0.5; };
boundary = {
  x_lo = { type = "dirichlet"; value = 1.0; }; x_hi = { type = "convective"; h = 4.0; ambient = 0.25; };
  y_lo = { type = "periodic"; }; y_hi = { type = "periodic"; };
  z_lo = { type = "flux"; value = 3.0; }; z_hi = { type = "dirichlet"; value = 0.0; };
};
output = { every = 5; };
solver = { backend = "cuda"; };
EOF
  for p in float double; do
    for ranks in "[2,1,1]" "[1,1,2]"; do
      for tb in 1 2; do san_run memcheck "$mdeck" "materials " "$p" "$ranks" "$tb"; done
    done
  done
  fails=$(grep -c '^FAIL' "$out/sanitize.log")
  if [ "$fails" = 0 ]; then
    record "compute-sanitizer memcheck+racecheck, 2 ranks" PASS \
      "$(grep -c '^ok' "$out/sanitize.log") runs clean"
  else
    record "compute-sanitizer memcheck+racecheck, 2 ranks" FAIL "$fails runs, see $out/sanitize.log"
  fi
fi

# glups LOG: the GLUP/s of a run's summary.
glups() { grep -oE '[0-9.]+ GLUP/s' "$1" | tail -1 | cut -d' ' -f1; }

if has loop; then
  say "whole loop: 512^3 float, all Dirichlet, residual every 100 steps"
  cp tools/loop.cfg "$out/loop.cfg"
  for tb in 1 3; do
    a=() b=()
    # Alternating, twice each: a busy moment hits both alike.
    for rep in 1 2; do
      "$plainheat" run "$out/loop.cfg" --overwrite --set "output.dir=\"$out/loop_p\"" \
        --set "solver.temporal_block=$tb" >"$out/loop_nompi_k${tb}_$rep.log" 2>&1
      a+=("$(glups "$out/loop_nompi_k${tb}_$rep.log")")
      "$mpiexec" -n 1 "$heat" run "$out/loop.cfg" --overwrite --set "output.dir=\"$out/loop_m\"" \
        --set "solver.temporal_block=$tb" >"$out/loop_mpi1_k${tb}_$rep.log" 2>&1
      b+=("$(glups "$out/loop_mpi1_k${tb}_$rep.log")")
    done
    best_a=$(printf '%s\n' "${a[@]}" | sort -g | tail -1)
    best_b=$(printf '%s\n' "${b[@]}" | sort -g | tail -1)
    ratio=$(awk -v x="$best_b" -v y="$best_a" 'BEGIN { if (y > 0) printf "%.4f", x / y; else print 0 }')
    ok=$(awk -v r="$ratio" 'BEGIN { print (r >= 0.98) ? "PASS" : "FAIL" }')
    record "one rank of the MPI build vs no MPI, k=$tb" "$ok" \
      "no MPI ${a[*]} GLUP/s, mpiexec -n 1 ${b[*]} GLUP/s (best ratio $ratio, needs >= 0.98)"
    if ! cmp -s "$out/loop_p/loop_ckpt_00003000.vtkhdf" "$out/loop_m/loop_ckpt_00003000.vtkhdf" &&
      ! "$py" -c "
import h5py, sys
a = h5py.File('$out/loop_p/loop_ckpt_00003000.vtkhdf')['VTKHDF/PointData/temperature'][()]
b = h5py.File('$out/loop_m/loop_ckpt_00003000.vtkhdf')['VTKHDF/PointData/temperature'][()]
sys.exit(0 if a.tobytes() == b.tobytes() else 1)"; then
      record "one rank vs no MPI, k=$tb: final field" FAIL "the checkpoints differ"
    fi
    rm -rf "$out/loop_p" "$out/loop_m"
  done
  for np in 2 4; do
    for tb in 1 3; do
      log=$out/loop_np${np}_k$tb.log
      "$mpiexec" -n "$np" "$heat" run "$out/loop.cfg" --overwrite \
        --set "output.dir=\"$out/loop_$np\"" --set "solver.temporal_block=$tb" >"$log" 2>&1
      rc=$?
      record "$np ranks sharing the GPU, k=$tb (for the record)" "$([ $rc = 0 ] && echo INFO || echo FAIL)" \
        "$(glups "$log") GLUP/s; $(grep -oE 'not hidden by compute [^(]*' "$log")"
      rm -rf "$out/loop_$np"
    done
  done
fi

if has bench; then
  say "heat bench: 1, 2 and 4 ranks, halo exchange per step"
  for np in 1 2 4; do
    "$mpiexec" -n "$np" "$heat" bench --backend cuda --kernel register_tiled \
      --size 512x512x512 --size 8192x8192x1 --precision float --temporal 1,3 --runs 10 \
      --json "$out/bench_np$np.json" >"$out/bench_np$np.txt" 2>&1
    rc=$?
    cat "$out/bench_np$np.txt"
    record "heat bench on $np rank(s)" "$([ $rc = 0 ] && echo PASS || echo FAIL)" \
      "$out/bench_np$np.txt"
  done
fi

say "summary ($summary)"
cat "$summary"
exit $status

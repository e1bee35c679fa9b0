#!/usr/bin/env bash
# Builds heat with CUDA and checks it on this machine's GPU in one go:
#   1. the gpu-labelled tests (every kernel against the CPU backend), the
#      restart tests, and the temporal face combinations on a grid of 7
#      blocks (shares that end inside windows);
#   2. compute-sanitizer memcheck and racecheck on a small run of every kernel,
#      float and double, 2D and 3D; the materials kernels on a deck of two
#      materials, a source, convective and flux faces; memcheck on multigrid
#      (steady and backward Euler);
#   3. `heat bench` (every kernel, 512^3 and 8192^2, float and double, and
#      register_tiled with temporal blocking k = 2, 3, 4, 6, 8);
#   4. the whole loop: `heat run` on a 512^3 float deck (all Dirichlet,
#      residual every 100 steps, no output between start and end), with
#      temporal_block 1 and 4 (the fastest in 3D float at 512^3);
# Logs and the bench JSON go to the directory given (default gpu-check/).
#
#   5. output overhead: the same 256^3 float run with a snapshot every 100
#      steps and with none;
#   6. profile: the compiler's resource report of the temporal-blocking
#      kernels and Nsight Compute on one pass of 3D float k = 3 and 2D float
#      k = 4.
#
#   tools/gpu_check.sh [OUTDIR] [steps...]
#   HEAT_CUDA_ARCHS: the architectures to build for (default 90, the H100)
#   steps: build tests sanitize bench loop output profile (default all but profile)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-check}
shift || true
steps=${*:-build tests sanitize bench loop output}
mkdir -p "$out"
build=${HEAT_GPU_BUILD:-build-gpu}
jobs=$(nproc 2>/dev/null || echo 4)
status=0

has() { [[ " $steps " == *" $1 "* ]]; }
say() { printf '\n== %s\n' "$*"; }

if has build; then
  say "build ($build)"
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DHEAT_CUDA=ON -DHEAT_BUILD_TESTS=ON \
    -DCMAKE_CUDA_ARCHITECTURES="${HEAT_CUDA_ARCHS:-90}" >"$out/configure.log" 2>&1 &&
    cmake --build "$build" -j"$jobs" >"$out/build.log" 2>&1 || {
    tail -n 40 "$out/configure.log" "$out/build.log"
    exit 1
  }
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem \
    --format=csv | tee "$out/gpu.txt"
fi
heat=$build/heat

if has tests; then
  say "tests (gpu, restart)"
  ctest --test-dir "$build" -L 'gpu|restart' --output-on-failure -j4 >"$out/tests.log" 2>&1 ||
    status=1
  grep -E "tests passed|Test +#|failures|FAILED|skipped" "$out/tests.log" | tail -20
  # The temporal face combinations again with 7 blocks in the persistent
  # grid, so that shares end inside windows and run on into the next.
  HEAT_CUDA_TB_BLOCKS=7 HEAT_TEST_FILTER=test_temporal_every_face_combination \
    "$build"/tests/test_gpu_temporal >"$out/tests_blocks7.log" 2>&1 || status=1
  grep -E "failures|PASSED|FAILED" "$out/tests_blocks7.log" | sed 's/^/7 blocks: /' 
fi

if has sanitize; then
  say "compute-sanitizer"
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
output = { every = 0; };
solver = { backend = "cuda"; };
EOF
  : >"$out/sanitize.log"
  # One small run per tool, kernel, precision and shape (odd x, x on the
  # 16-byte path; 3D and 2D), eight at a time.
  sanitize_one() {
    local tool=$1 k=$2 p=$3 pts=$4 tb=$5 d
    d=$out/san_${tool}_${k}_${p}_${pts//[^0-9]/_}_$tb
    if compute-sanitizer --tool "$tool" --error-exitcode 9 "$heat" run "$deck" --quiet \
      --set "solver.kernel=$k" --set "solver.precision=$p" --set "grid.points=$pts" \
      --set "solver.temporal_block=$tb" --set "output.dir=$d" >"$d.log" 2>&1; then
      echo "ok   $tool $k $p $pts k=$tb" >>"$out/sanitize.log"
    else
      { echo "FAIL $tool $k $p $pts k=$tb"; cat "$d.log"; } >>"$out/sanitize.log"
    fi
    rm -rf "$d" "$d.log"
  }
  # Every run of the kernels $1 on the shapes $2 with both tools and
  # precisions; register_tiled also with 4 steps fused per pass (13 steps:
  # a remainder pass at the end). Eight at a time.
  n=0
  sanitize_all() {
    local tool k p pts tb shapes
    read -ra shapes <<<"$2" # (no globbing: the shapes look like bracket patterns)
    for tool in memcheck racecheck; do
      for k in $1; do
        for p in float double; do
          for pts in "${shapes[@]}"; do
            for tb in 1 4; do
              [ "$tb" = 4 ] && [ "$k" != register_tiled ] && continue
              sanitize_one "$tool" "$k" "$p" "$pts" "$tb" &
              n=$((n + 1))
              if [ $n -ge 8 ]; then wait -n; n=$((n - 1)); fi
            done
          done
        done
      done
    done
    wait
  }
  sanitize_all "naive tiled sliced register_tiled" "[37,19,11] [44,19,11] [37,23,1] [520,23,1]"
  # The variable-coefficient kernels: the same deck with two materials, a
  # source and convective and flux faces (every kernel, fused passes too);
  # and multigrid: a steady solve and backward-Euler steps.
  sed -e 's/^material = .*/materials = ( { name = "a"; conductivity = 1.0; density = 1.0; specific_heat = 1.0; }, { name = "b"; conductivity = 7.0; density = 2.0; specific_heat = 0.5; } );\nregions = ( { material = "b"; box = { min = [0.2, 0.0, 0.0]; max = [0.6, 0.3, 0.2]; }; } );\nsources = ( { sphere = { center = [0.5, 0.25, 0.15]; radius = 0.1; }; power_density = 10.0; } );/' \
    -e 's/x_hi = { type = "neumann"; gradient = 0.5; }/x_hi = { type = "convective"; h = 3.0; ambient = 0.2; }/' \
    -e 's/z_lo = { type = "neumann"; gradient = -1.0; }/z_lo = { type = "flux"; value = 2.0; }/' \
    "$deck" >"$out/sanitize_mat.cfg"
  deck0=$deck
  deck=$out/sanitize_mat.cfg
  sanitize_all "naive register_tiled" "[37,19,11] [44,19,11] [37,23,1]"
  for d in "$deck0" "$deck"; do
    for extra in 'steady.method="multigrid"' 'time.scheme="backward_euler"'; do
      for p in float double; do
        name=$out/san_mg_$(basename "$d" .cfg)_${extra%%.*}_$p
        if compute-sanitizer --tool memcheck --error-exitcode 9 "$heat" run "$d" --quiet \
          --set "$extra" --set 'time.dt=0.05' --set "solver.precision=$p" \
          --set "output.dir=$name" >"$name.log" 2>&1 || [ $? = 3 ]; then
          echo "ok   memcheck multigrid $(basename "$d") $extra $p" >>"$out/sanitize.log"
        else
          { echo "FAIL memcheck multigrid $(basename "$d") $extra $p"; cat "$name.log"; } >>"$out/sanitize.log"
        fi
        rm -rf "$name" "$name.log"
      done
    done
  done
  deck=$deck0
  grep -c '^ok' "$out/sanitize.log" | sed 's/$/ sanitizer runs clean/'
  grep '^FAIL' "$out/sanitize.log" && status=1
fi

if has bench; then
  say "bench"
  "$heat" bench --runs 20 --json "$out/bench.json" | tee "$out/bench.txt" || status=1
fi

if has loop; then
  say "whole loop: heat run, 512^3 float, all Dirichlet, residual every 100 steps"
  cp tools/loop.cfg "$out/loop.cfg"
  for tb in 1 4; do
    "$heat" run "$out/loop.cfg" --overwrite --set "output.dir=$out/loop" \
      --set "solver.temporal_block=$tb" | sed "s/^/temporal_block=$tb: /" || status=1
  done | tee "$out/loop.txt"
  rm -rf "$out/loop"
fi
if has output; then
  say "output overhead: 256^3 float, 2000 steps, a snapshot every 100 steps against none"
  sed -e 's/512, 512, 512/256, 256, 256/' -e 's/max_steps = 3000/max_steps = 2000/' \
    "$out/loop.cfg" >"$out/output.cfg"
  for every in 0 100 0 100; do
    "$heat" run "$out/output.cfg" --overwrite --set "output.dir=$out/o$every" \
      --set "output.every=$every" | grep -E "wall|files" | sed "s/^/every=$every: /"
    rm -rf "$out/o$every"
  done | tee "$out/output.txt"
fi
if has profile; then
  say "profile: resource report and Nsight Compute of the temporal-blocking kernel"
  cuobjdump -res-usage "$build"/CMakeFiles/heat_cuda.dir/kernels/cuda/k_temporal.cu.o 2>&1 |
    grep -A1 temporal_kernel | grep -oE 'temporal_kernelI[fd]Lb[01]ELb[01]ELi[0-9]|REG:[0-9]+|STACK:[0-9]+|SHARED:[0-9]+|LOCAL:[0-9]+' |
    paste - - - - - | sed -e 's/temporal_kernelI\(.\)Lb\(.\)ELb\(.\)ELi/T=\1 3D=\2 residual=\3 k=/' |
    tee "$out/resources.txt"
  for cfg in "512x512x512 3" "8192x8192x1 4"; do
    set -- $cfg
    ncu --kernel-name regex:temporal_kernel --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section InstructionStats --section MemoryWorkloadAnalysis \
      "$heat" bench --backend cuda --kernel register_tiled --size "$1" --precision float \
      --temporal "$2" --runs 3 --steps "$2" >"$out/ncu_$1_k$2.txt" 2>&1
    echo "-- $1 float k=$2"
    grep -E "^ +(Duration|DRAM Throughput|Compute \(SM\) Throughput|Executed Ipc Active|Issue Slots Busy|Achieved Occupancy|Registers Per Thread|Dynamic Shared Memory Per Block|Executed Instructions) " \
      "$out/ncu_$1_k$2.txt" | sed 's/  */ /g'
  done | tee "$out/profile.txt"
fi
exit $status

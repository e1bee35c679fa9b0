# Tests driven by scripts: ParaView reading a run (label paraview), the
# plotting tool (tools), and killing runs and continuing them (restart).
#
# This file has two roles. Included from tests/CMakeLists.txt, it registers
# the tests; each test then runs `cmake -P` on this same file with HEAT_TEST
# set, which does that test's steps (write decks, run heat, run the checker)
# and fails with a message at the first step that goes wrong.
#
# The interpreters are found at configure time. A missing one is not a
# reason to skip: the test is registered anyway and fails, naming the Debian
# package that provides it (tools/quickstart.sh installs them all).

if(NOT CMAKE_SCRIPT_MODE_FILE)
  find_program(HEAT_PVPYTHON pvpython DOC "ParaView's Python (Debian: python3-paraview)")

  # A python3 that imports h5py and matplotlib: the one on PATH, else the
  # system's (a virtual environment or another Python first on PATH may lack them).
  if(NOT HEAT_PYTHON3)
    find_program(_heat_python3_on_path python3)
    foreach(_py IN ITEMS ${_heat_python3_on_path} /usr/bin/python3)
      if(EXISTS "${_py}")
        execute_process(COMMAND "${_py}" -c "import numpy, h5py, matplotlib"
                        RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
        if(_rc EQUAL 0)
          set(HEAT_PYTHON3 "${_py}" CACHE FILEPATH
              "python3 with h5py and matplotlib, for the script tests")
          break()
        endif()
      endif()
    endforeach()
    unset(_heat_python3_on_path CACHE)
  endif()
  if(HEAT_PYTHON3)
    set(_py "${HEAT_PYTHON3}")
  else()
    set(_py "python3-NOTFOUND")
  endif()

  set(_driver ${CMAKE_COMMAND} -DHEAT=$<TARGET_FILE:heat> -DSRC=${PROJECT_SOURCE_DIR}
      -DPVPYTHON=${HEAT_PVPYTHON} -DPYTHON3=${_py})

  add_test(NAME paraview COMMAND ${_driver} -DHEAT_TEST=paraview
           -DWORK=${CMAKE_CURRENT_BINARY_DIR}/tmp_paraview -P ${CMAKE_CURRENT_LIST_FILE})
  add_test(NAME plot COMMAND ${_driver} -DHEAT_TEST=plot
           -DWORK=${CMAKE_CURRENT_BINARY_DIR}/tmp_plot -P ${CMAKE_CURRENT_LIST_FILE})
  add_test(NAME examples COMMAND ${_driver} -DHEAT_TEST=examples
           -DWORK=${CMAKE_CURRENT_BINARY_DIR}/tmp_examples -P ${CMAKE_CURRENT_LIST_FILE})
  add_test(NAME kill_restart COMMAND ${_driver} -DHEAT_TEST=kill_restart
           -DWORK=${CMAKE_CURRENT_BINARY_DIR}/tmp_kill_restart -P ${CMAKE_CURRENT_LIST_FILE})
  # PROCESSORS 2: the OpenMP runs spin at barriers (see tests/CMakeLists.txt).
  set_tests_properties(paraview PROPERTIES LABELS paraview TIMEOUT 300 PROCESSORS 2)
  set_tests_properties(plot PROPERTIES LABELS tools TIMEOUT 300 PROCESSORS 2)
  set_tests_properties(examples PROPERTIES LABELS tools TIMEOUT 300 PROCESSORS 2)
  set_tests_properties(kill_restart PROPERTIES LABELS restart TIMEOUT 300 PROCESSORS 2)
  return()
endif()

# ---------------------------------------------------------------- script mode

function(need_python3)
  if(NOT EXISTS "${PYTHON3}")
    message(FATAL_ERROR "${HEAT_TEST}: no python3 that imports h5py and matplotlib was found "
            "when cmake ran: install Debian's python3-h5py and python3-matplotlib (or run "
            "tools/quickstart.sh), then configure again (or set -DHEAT_PYTHON3=...)")
  endif()
endfunction()

# run(NAME COMMAND...): runs a command in WORK, fails the test unless it exits 0.
function(run what)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc STREQUAL "0")
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "${HEAT_TEST}: ${what} failed (exit status ${rc}): ${cmd}")
  endif()
endfunction()

# run_fails(NAME EXPECT_TEXT COMMAND...): the command must exit 2 and say EXPECT_TEXT.
function(run_fails what text)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(REPLACE ";" " " cmd "${ARGN}")
  if(NOT rc STREQUAL "2")
    message(FATAL_ERROR "${HEAT_TEST}: ${what}: expected exit status 2, got ${rc}: ${cmd}\n${out}")
  endif()
  string(FIND "${out}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${HEAT_TEST}: ${what}: the message lacks '${text}': ${cmd}\n${out}")
  endif()
  message("${what}: refused as expected: ${out}")
endfunction()

# write_deck(FILE NAME POINTS LENGTH ORIGIN PRECISION): a small deck with a
# field that varies along every axis, a few snapshots and checkpoints.
function(write_deck file name points length origin precision)
  file(WRITE ${file} "name = \"${name}\";
grid = { points = [${points}]; length = [${length}]; origin = [${origin}]; };
material = { diffusivity = 2.0e-3; };
time = { max_steps = 70; };
initial = { type = \"gaussian\"; center = [0.9, -0.6, 2.15]; width = 0.2; amplitude = 80.0;
            base = 20.0; };
boundary = {
  x_lo = { type = \"dirichlet\"; value = 100.0; };
  x_hi = { type = \"dirichlet\"; value = 0.0; };
  y_lo = { type = \"neumann\"; gradient = 0.0; };
  y_hi = { type = \"neumann\"; gradient = -5.0; };
  z_lo = { type = \"neumann\"; gradient = 0.0; };
  z_hi = { type = \"dirichlet\"; value = 20.0; };
};
output = { dir = \"${name}\"; every = 20; checkpoint_every = 25; };
solver = { backend = \"cpu\"; precision = \"${precision}\"; };
")
endfunction()

# A valid PNG: the signature, an IHDR of at least 200 x 150 pixels, and
# enough bytes to hold a picture rather than an empty canvas.
function(check_png path)
  if(NOT EXISTS ${path})
    message(FATAL_ERROR "${HEAT_TEST}: ${path} was not written")
  endif()
  file(SIZE ${path} size)
  file(READ ${path} head LIMIT 24 HEX)
  string(SUBSTRING "${head}" 0 32 sig)
  if(NOT sig STREQUAL "89504e470d0a1a0a0000000d49484452")
    message(FATAL_ERROR "${HEAT_TEST}: ${path} is not a PNG file (starts ${sig})")
  endif()
  string(SUBSTRING "${head}" 32 8 w)
  string(SUBSTRING "${head}" 40 8 h)
  math(EXPR w "0x${w}")
  math(EXPR h "0x${h}")
  if(w LESS 200 OR h LESS 150 OR size LESS 10000)
    message(FATAL_ERROR "${HEAT_TEST}: ${path}: ${w} x ${h} pixels, ${size} bytes: "
            "too small to be a picture")
  endif()
  message("${path}: PNG ${w} x ${h}, ${size} bytes")
endfunction()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

if(HEAT_TEST STREQUAL "paraview")
  if(NOT EXISTS "${PVPYTHON}")
    message(FATAL_ERROR "paraview: pvpython was not found when cmake ran: this test needs "
            "ParaView's Python, Debian's python3-paraview (apt-get install python3-paraview, "
            "or tools/quickstart.sh), then configure again")
  endif()
  # 3D in float and 2D in double; an origin away from 0 and a different
  # spacing on each axis, so that any axis order mix-up shows.
  write_deck(${WORK}/pv3d.cfg pv3d "24, 20, 12" "1.15, 0.76, 0.33" "0.5, -1.0, 2.0" float)
  write_deck(${WORK}/pv2d.cfg pv2d "24, 20, 1" "1.15, 0.76, 0.33" "0.5, -1.0, 2.0" double)
  run("heat run pv3d.cfg" ${HEAT} run pv3d.cfg --quiet)
  run("heat run pv2d.cfg" ${HEAT} run pv2d.cfg --quiet)
  run("ParaView check of the 3D float run" ${PVPYTHON} ${SRC}/tests/paraview_check.py pv3d
      --python3 ${PYTHON3}
      --points 24,20,12 --length 1.15,0.76,0.33 --origin 0.5,-1.0,2.0 --precision float)
  run("ParaView check of the 2D double run" ${PVPYTHON} ${SRC}/tests/paraview_check.py pv2d
      --python3 ${PYTHON3}
      --points 24,20,1 --length 1.15,0.76,0.33 --origin 0.5,-1.0,2.0 --precision double)
  # Three materials: the material index as point data beside the temperature.
  file(READ ${WORK}/pv3d.cfg _deck)
  string(REPLACE "name = \"pv3d\";" "name = \"pvmat\";" _deck "${_deck}")
  string(REPLACE "dir = \"pv3d\"" "dir = \"pvmat\"" _deck "${_deck}")
  string(REGEX REPLACE "material = {[^}]*};" "materials = (
  { name = \"a\"; conductivity = 1.0; density = 1.0; specific_heat = 1.0; },
  { name = \"b\"; conductivity = 3.0; density = 2.0; specific_heat = 1.0; },
  { name = \"c\"; conductivity = 0.5; density = 1.0; specific_heat = 2.0; } );
regions = ( { material = \"b\"; box = { min = [0.5, -1.0, 2.0]; max = [1.0, -0.6, 2.33]; }; },
  { material = \"c\"; sphere = { center = [1.4, -0.5, 2.2]; radius = 0.2; }; } );" _deck "${_deck}")
  file(WRITE ${WORK}/pvmat.cfg "${_deck}")
  run("heat run pvmat.cfg" ${HEAT} run pvmat.cfg --quiet)
  run("ParaView check of the 3D run with materials" ${PVPYTHON} ${SRC}/tests/paraview_check.py
      pvmat --python3 ${PYTHON3} --materials 3
      --points 24,20,12 --length 1.15,0.76,0.33 --origin 0.5,-1.0,2.0 --precision float)

elseif(HEAT_TEST STREQUAL "plot")
  need_python3()
  set(plot ${PYTHON3} ${SRC}/tools/heat_plot.py)
  write_deck(${WORK}/p3d.cfg p3d "24, 20, 12" "1.15, 0.76, 0.33" "0.5, -1.0, 2.0" double)
  write_deck(${WORK}/p2d.cfg p2d "24, 20, 1" "1.15, 0.76, 0.33" "0.5, -1.0, 2.0" float)
  run("heat run p3d.cfg" ${HEAT} run p3d.cfg --quiet)
  run("heat run p2d.cfg" ${HEAT} run p2d.cfg --quiet)
  run("heat_plot.py --help" ${plot} --help)
  run("slice, default plane" ${plot} slice p3d/p3d_00000070.vtkhdf -o slice_z.png)
  run("slice --axis x --position" ${plot} slice p3d/p3d_00000040.vtkhdf --axis x
      --position 1.0 -o slice_x.png)
  run("slice of a checkpoint" ${plot} slice p3d/p3d_ckpt_00000070.vtkhdf --axis y --index 3
      -o slice_ckpt.png)
  run("slice of a 2D run" ${plot} slice p2d/p2d_00000070.vtkhdf -o slice_2d.png)
  run("history" ${plot} history p3d/history.csv -o history.png)
  foreach(png slice_z slice_x slice_ckpt slice_2d history)
    check_png(${WORK}/${png}.png)
  endforeach()
  run_fails("a missing file" "no such file" ${plot} slice p3d/nothing.vtkhdf -o bad1.png)
  run_fails("history.csv as a snapshot" "not an HDF5 file" ${plot} slice p3d/history.csv
      -o bad2.png)
  run_fails("a snapshot as history.csv" "expected a heat history.csv" ${plot} history
      p3d/p3d_00000000.vtkhdf -o bad3.png)
  run_fails("the .xmf as history.csv" "not a heat history.csv" ${plot} history p3d/p3d.xmf
      -o bad4.png)
  run_fails("a plane outside the grid" "outside" ${plot} slice p3d/p3d_00000000.vtkhdf
      --axis z --index 12 -o bad5.png)
  run_fails("an x plane of a 2D run" "2D run" ${plot} slice p2d/p2d_00000000.vtkhdf --axis x
      -o bad6.png)
  # -o a directory, an unknown format, a bad --dpi or colour range: refused;
  # a name without an extension gets .png, and the message says so
  file(MAKE_DIRECTORY ${WORK}/outdir)
  run_fails("-o a directory" "a directory" ${plot} history p3d/history.csv -o outdir)
  run_fails("-o an unknown format" "writes no .xyz files" ${plot} history p3d/history.csv
      -o bad7.xyz)
  run_fails("--dpi 100000" "--dpi 100000: expected 1 to 2000" ${plot} history p3d/history.csv
      --dpi 100000 -o bad8.png)
  run_fails("--vmin above --vmax" "expected vmin < vmax" ${plot} slice p3d/p3d_00000070.vtkhdf
      --vmin 10 --vmax 5 -o bad9.png)
  run_fails("--vmin nan" "--vmin nan: expected a finite number" ${plot} slice
      p3d/p3d_00000070.vtkhdf --vmin nan -o bad10.png)
  file(WRITE ${WORK}/zero.csv "kind,ranks,precision,k,transport,glups\nweak,1,float,1,-,0.5\n"
       "weak,0,float,1,nccl,1.0\n")
  run_fails("scaling with ranks 0" "zero.csv:3: ranks 0 and glups 1.0" ${plot} scaling zero.csv
      -o bad11.png)
  execute_process(COMMAND ${plot} history p3d/history.csv -o noext WORKING_DIRECTORY ${WORK}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(FIND "${out}" "wrote noext.png" at)
  if(NOT rc STREQUAL "0" OR at EQUAL -1 OR NOT EXISTS ${WORK}/noext.png)
    message(FATAL_ERROR "plot: -o noext: expected noext.png written and named (exit ${rc}): ${out}")
  endif()
  foreach(bad bad1.png bad2.png bad3.png bad4.png bad5.png bad6.png bad7.xyz bad7.xyz.png
          bad8.png bad9.png bad10.png bad11.png)
    if(EXISTS ${WORK}/${bad})
      message(FATAL_ERROR "plot: a refused command still wrote ${bad}")
    endif()
  endforeach()

elseif(HEAT_TEST STREQUAL "examples")
  # Every example deck is valid and runs (a few steps, on the CPU), every
  # measurement deck in tools/ is valid; the chip deck of the README says
  # what the README says it does.
  file(GLOB decks ${SRC}/docs/examples/*.cfg)
  list(LENGTH decks n)
  if(n LESS 4)
    message(FATAL_ERROR "examples: ${n} decks in ${SRC}/docs/examples, expected at least 4")
  endif()
  foreach(deck ${decks})
    get_filename_component(name ${deck} NAME_WE)
    run("heat check ${name}.cfg" ${HEAT} check ${deck})
    run("heat run ${name}.cfg, 3 steps" ${HEAT} run ${deck} --quiet --set time.max_steps=3
        --set "output.dir=\"${WORK}/${name}\"" --set "solver.backend=\"cpu\"")
  endforeach()
  # The measurement decks of docs/PERFORMANCE.md (tools/) are valid too.
  file(GLOB tdecks ${SRC}/tools/*.cfg)
  foreach(deck ${tdecks})
    get_filename_component(name ${deck} NAME)
    run("heat check tools/${name}" ${HEAT} check ${deck})
  endforeach()
  execute_process(COMMAND ${HEAT} check ${SRC}/docs/examples/chip.cfg OUTPUT_VARIABLE out)
  foreach(want "injecting 2 W" "material        mold (0)" "material        copper (3)"
          "boundary z_hi    convective, h 5000, ambient 25" "probe           junction")
    string(FIND "${out}" "${want}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "examples: heat check chip.cfg does not say '${want}':\n${out}")
    endif()
  endforeach()
  # The chip deck's header gives the V-cycles of its steady state by
  # multigrid: the run's.
  file(READ ${SRC}/docs/examples/chip.cfg text)
  string(REGEX MATCH "by multigrid \\(([0-9]+) V-cycles" said "${text}")
  set(said "${CMAKE_MATCH_1}")
  execute_process(COMMAND ${HEAT} run ${SRC}/docs/examples/chip.cfg
                  --set "steady={tolerance=1.0e-6;method=\"multigrid\";}"
                  --set "output.dir=\"${WORK}/chip_steady\"" --set "solver.backend=\"cpu\""
                  OUTPUT_VARIABLE out ERROR_VARIABLE errout RESULT_VARIABLE rc)
  string(REGEX MATCH "multigrid: ([0-9]+) V-cycles" got "${out}")
  if(NOT rc EQUAL 0 OR said STREQUAL "" OR NOT said STREQUAL CMAKE_MATCH_1)
    message(FATAL_ERROR "examples: chip.cfg says '${said}' V-cycles to its steady state, the run "
                        "(exit ${rc}) says:\n${out}${errout}")
  endif()
  # The plate deck's header gives its number of steps: heat check's.
  file(READ ${SRC}/docs/examples/plate.cfg text)
  string(REGEX MATCH "heat run plate.cfg +(about +)?([0-9,]+) steps" said "${text}")
  string(REPLACE "," "" said "${CMAKE_MATCH_2}")
  execute_process(COMMAND ${HEAT} check ${SRC}/docs/examples/plate.cfg OUTPUT_VARIABLE out)
  string(REGEX MATCH "stops +at step ([0-9]+)" stops "${out}")
  if(said STREQUAL "" OR NOT said STREQUAL CMAKE_MATCH_1)
    message(FATAL_ERROR "examples: plate.cfg says '${said}' steps, heat check says:\n${out}")
  endif()

elseif(HEAT_TEST STREQUAL "kill_restart")
  need_python3()
  run("kill and restart" ${PYTHON3} ${SRC}/tests/kill_restart.py --heat ${HEAT} --work ${WORK})

else()
  message(FATAL_ERROR "scripts.cmake: unknown HEAT_TEST '${HEAT_TEST}'")
endif()

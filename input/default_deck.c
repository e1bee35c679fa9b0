/* The deck `heat run` uses when none is given: a 64^3 block, hot on the left
 * face, cold on the right, periodic front to back, insulated below and
 * cooled from above, with a warm Gaussian blob drifting apart inside. About
 * 1600 steps: a few seconds on a laptop CPU, and a picture with some shape. */
#include "deck.h"

const char heat_default_deck[] =
    "# heat: the built-in default deck (heat run with no deck file).\n"
    "name = \"default\";\n"
    "grid = {\n"
    "  points = [64, 64, 64];\n"
    "  length = [1.0, 1.0, 1.0];\n"
    "};\n"
    "material = { diffusivity = 1.0e-4; };\n"
    "time = { end = 600.0; };\n"
    "initial = {\n"
    "  type = \"gaussian\";\n"
    "  center = [0.35, 0.5, 0.45];\n"
    "  width = 0.12;\n"
    "  amplitude = 80.0;\n"
    "  base = 20.0;\n"
    "};\n"
    "boundary = {\n"
    "  x_lo = { type = \"dirichlet\"; value = 100.0; };\n"
    "  x_hi = { type = \"dirichlet\"; value = 0.0; };\n"
    "  y_lo = { type = \"periodic\"; };\n"
    "  y_hi = { type = \"periodic\"; };\n"
    "  z_lo = { type = \"neumann\"; gradient = 0.0; };\n"
    "  z_hi = { type = \"neumann\"; gradient = -20.0; };\n"
    "};\n"
    "output = { dir = \"out/default\"; every = 200; checkpoint_every = 1000; };\n";

#include "heat_case.h"

const char *heat_bc_type_name(heat_bc_type t)
{
    static const char *names[] = {"dirichlet", "neumann", "periodic"};
    return (unsigned)t < 3 ? names[t] : "?";
}

const char *heat_init_type_name(heat_init_type t)
{
    static const char *names[] = {"constant", "gaussian", "sine", "file"};
    return (unsigned)t < 4 ? names[t] : "?";
}

const char *heat_backend_kind_name(heat_backend_kind k)
{
    static const char *names[] = {"auto", "cpu", "cuda"};
    return (unsigned)k < 3 ? names[k] : "?";
}

const char *heat_precision_name(heat_precision p)
{
    return p == HEAT_FLOAT ? "float" : "double";
}

const char *heat_kernel_name(heat_kernel k)
{
    static const char *names[] = {"naive", "tiled", "sliced", "register_tiled"};
    return (unsigned)k < 4 ? names[k] : "?";
}

const char *heat_face_name(int face)
{
    static const char *names[] = {"x_lo", "x_hi", "y_lo", "y_hi", "z_lo", "z_hi"};
    return (unsigned)face < 6 ? names[face] : "?";
}

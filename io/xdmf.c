/* XDMF 3 index (https://www.xdmf.org/index.php/XDMF_Model_and_Format).
 *
 * A uniform grid per snapshot inside a temporal collection. The mesh is a
 * 3DCoRectMesh with ORIGIN_DXDYDZ geometry; XDMF orders Dimensions, Origin
 * and Spacing slowest axis first, that is z, y, x, as ParaView's XDMF
 * readers expect, matching the (nz, ny, nx) field array. */
#include "xdmf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "h5file.h"
#include "io_util.h"

int heat_xdmf_write(const char *path, const heat_case *c, const heat_xdmf_entry *e, size_t n,
                    heat_error *err)
{
    char tmp[HEAT_PATH_MAX + HEAT_NAME_MAX + 128];
    heat_file_tmp_path(tmp, sizeof tmp, path);
    FILE *f = fopen(tmp, "w");
    if (!f) return heat_error_set(err, HEAT_ERUNTIME, "cannot write %s: %s", path, strerror(errno));
    const int prec = c->solver.precision == HEAT_FLOAT ? 4 : 8;
    const long long nx = (long long)c->grid.n[0], ny = (long long)c->grid.n[1],
                    nz = (long long)c->grid.n[2];
    fprintf(f, "<?xml version=\"1.0\" ?>\n"
               "<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n"
               "<Xdmf Version=\"3.0\">\n"
               "  <Domain>\n");
    fprintf(f, "    <Grid Name=\"%s\" GridType=\"Collection\" CollectionType=\"Temporal\">\n",
            c->name);
    for (size_t i = 0; i < n; i++) {
        char file[HEAT_NAME_MAX + 64];
        snprintf(file, sizeof file, HEAT_SNAPSHOT_FMT, c->name, (long long)e[i].step);
        fprintf(f, "      <Grid Name=\"step %lld\" GridType=\"Uniform\">\n", (long long)e[i].step);
        fprintf(f, "        <Time Value=\"%.17g\" />\n", e[i].time);
        fprintf(
            f, "        <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"%lld %lld %lld\" />\n",
            nz, ny, nx);
        fprintf(f, "        <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n");
        fprintf(f,
                "          <DataItem Name=\"Origin\" Dimensions=\"3\" NumberType=\"Float\" "
                "Precision=\"8\" Format=\"XML\">%.17g %.17g %.17g</DataItem>\n",
                c->grid.origin[2], c->grid.origin[1], c->grid.origin[0]);
        fprintf(f,
                "          <DataItem Name=\"Spacing\" Dimensions=\"3\" NumberType=\"Float\" "
                "Precision=\"8\" Format=\"XML\">%.17g %.17g %.17g</DataItem>\n",
                c->d.h[2], c->d.h[1], c->d.h[0]);
        fprintf(f, "        </Geometry>\n");
        fprintf(f, "        <Attribute Name=\"temperature\" AttributeType=\"Scalar\" "
                   "Center=\"Node\">\n");
        char shape[96];
        snprintf(shape, sizeof shape, "%lld %lld %lld", nz, ny, nx);
        fprintf(f,
                "          <DataItem Dimensions=\"%s\" NumberType=\"Float\" Precision=\"%d\" "
                "Format=\"HDF\">%s:/VTKHDF/PointData/temperature</DataItem>\n",
                shape, prec, file);
        fprintf(f, "        </Attribute>\n");
        if (heat_case_writes_material(c))
            fprintf(f,
                    "        <Attribute Name=\"material\" AttributeType=\"Scalar\" "
                    "Center=\"Node\">\n"
                    "          <DataItem Dimensions=\"%s\" NumberType=\"UChar\" Precision=\"1\" "
                    "Format=\"HDF\">%s:/VTKHDF/PointData/material</DataItem>\n"
                    "        </Attribute>\n",
                    shape, file);
        fprintf(f, "      </Grid>\n");
    }
    fprintf(f, "    </Grid>\n"
               "  </Domain>\n"
               "</Xdmf>\n");
    int bad = fflush(f) != 0 || ferror(f);
    int e_no = errno;
    if (fclose(f) != 0 && !bad) bad = 1, e_no = errno;
    if (bad) {
        unlink(tmp);
        return heat_error_set(err, HEAT_ERUNTIME, "cannot write %s: %s", path, strerror(e_no));
    }
    return heat_io_commit(tmp, path, err);
}

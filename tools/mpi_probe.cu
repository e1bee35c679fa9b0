/* What a host-staged halo exchange can reach between the ranks of one
 * host: the MPI exchange alone (every rank sends n bytes to the next rank
 * and receives n from the one before, Isend/Irecv and Waitall, as heat's
 * halo exchange does) from plain heap memory and from pinned memory
 * (cudaHostAlloc, as heat stages through), and the whole staged exchange:
 * device to host copy, the MPI exchange, host to device copy. Not a part
 * of heat: a ceiling for parallel.transport = "mpi" (host-staged).
 *
 *   nvcc -O2 -o mpi_probe tools/mpi_probe.cu $(mpicc --showme:compile) \
 *     $(mpicc --showme:link)
 *   mpiexec -n 2 ./mpi_probe [bytes ...]     (default 262144 1048576 4194304)
 *
 * Each rank uses GPU (local rank) modulo the GPUs it sees. Prints, on rank
 * 0, the median over 50 timed exchanges (after 5 untimed) of the slowest
 * rank, in microseconds, and the bytes a rank sends per second; and
 * "WRONG DATA" where a buffer did not receive the previous rank's bytes.
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>
#include <mpi.h>

static const int RUNS = 50, WARM = 5;

static void need(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return;
    fprintf(stderr, "mpi_probe: %s: %s\n", what, cudaGetErrorString(e));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The median over RUNS of the slowest rank's time of f(), in seconds. */
template <typename F> static double timed(F f)
{
    std::vector<double> t;
    for (int i = 0; i < WARM + RUNS; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        f();
        double dt = MPI_Wtime() - t0, worst = 0;
        MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (i >= WARM) t.push_back(worst);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1, local = 0, ngpu = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    need(cudaGetDeviceCount(&ngpu), "cudaGetDeviceCount");
    need(cudaSetDevice(local % ngpu), "cudaSetDevice");
    std::vector<size_t> sizes;
    for (int i = 1; i < argc; i++) sizes.push_back(strtoull(argv[i], NULL, 10));
    if (sizes.empty()) sizes = {262144, 1048576, 4194304};
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    if (rank == 0)
        printf("%d ranks, %d GPUs seen by rank 0; us: median of %d, slowest rank\n"
               "%10s %16s %16s %16s %12s\n",
               size, ngpu, RUNS, "bytes", "mpi heap", "mpi pinned", "staged (pinned)", "D2H+H2D");
    for (size_t n : sizes) {
        char *hs = (char *)malloc(n), *hr = (char *)malloc(n), *ps, *pr, *ds, *dr;
        need(cudaHostAlloc((void **)&ps, n, cudaHostAllocDefault), "cudaHostAlloc");
        need(cudaHostAlloc((void **)&pr, n, cudaHostAllocDefault), "cudaHostAlloc");
        need(cudaMalloc((void **)&ds, n), "cudaMalloc");
        need(cudaMalloc((void **)&dr, n), "cudaMalloc");
        memset(hs, rank, n), memset(ps, rank, n);
        need(cudaMemset(ds, rank, n), "cudaMemset");
        memset(hr, -1, n), memset(pr, -1, n);
        auto exchange = [&](char *s, char *r) {
            MPI_Request q[2];
            MPI_Irecv(r, (int)n, MPI_BYTE, prev, 7, MPI_COMM_WORLD, &q[0]);
            MPI_Isend(s, (int)n, MPI_BYTE, next, 7, MPI_COMM_WORLD, &q[1]);
            MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        };
        const double heap = timed([&] { exchange(hs, hr); });
        const double pinned = timed([&] { exchange(ps, pr); });
        const double staged = timed([&] {
            need(cudaMemcpy(ps, ds, n, cudaMemcpyDeviceToHost), "D2H");
            exchange(ps, pr);
            need(cudaMemcpy(dr, pr, n, cudaMemcpyHostToDevice), "H2D");
        });
        const double copies = timed([&] {
            need(cudaMemcpy(ps, ds, n, cudaMemcpyDeviceToHost), "D2H");
            need(cudaMemcpy(dr, pr, n, cudaMemcpyHostToDevice), "H2D");
        });
        /* What arrived is the previous rank's (heap, pinned, device). */
        std::vector<char> back(n);
        need(cudaMemcpy(back.data(), dr, n, cudaMemcpyDeviceToHost), "D2H");
        int bad = 0;
        for (size_t i = 0; i < n; i++)
            bad |= hr[i] != (char)prev || pr[i] != (char)prev || back[i] != (char)prev;
        MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
        if (bad && rank == 0) printf("%10zu: WRONG DATA received\n", n);
        if (rank == 0)
            printf("%10zu %9.1f %5.1fGB/s %9.1f %5.1fGB/s %9.1f %5.1fGB/s %12.1f\n", n, 1e6 * heap,
                   n / heap / 1e9, 1e6 * pinned, n / pinned / 1e9, 1e6 * staged, n / staged / 1e9,
                   1e6 * copies);
        free(hs), free(hr);
        cudaFreeHost(ps), cudaFreeHost(pr), cudaFree(ds), cudaFree(dr);
    }
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0;
}

// The disk's floor for one appender: a loop of one write and one fdatasync per record, with
// nothing else, into a 64 MiB (or SEG_MIB) file prepared one of three ways:
//   zeroahead  fallocate'd, zeros written 1 MiB ahead of the records (braid's file device)
//   recycled   written in full before (a reused segment file, as okaywal and raft-engine reuse
//              theirs); with SEG_MIB 1 the records wrap around a 1 MiB file
//   unwritten  fallocate'd only (the first write into each block converts its extent)
// Prints appends per second and the mean, p50, p99 and p99.9 of one write + fdatasync.
//
//   gcc -O2 -pthread -o target/append-floor scripts/append-floor.c
//   target/append-floor MODE PATH RECORDS RECORD_BYTES [SEG_MIB]
//
// PATH must be on the file system being measured (not tmpfs); the file is removed after.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void must(int ok, const char *what) {
    if (!ok) {
        perror(what);
        exit(1);
    }
}

static int fd;
static size_t seg;
/* The writer's next offset, the end of what the zeroing thread has written and synced. */
static atomic_size_t written, synced;
static atomic_int done;
static char zeros[1 << 20];

/* zerosync: keep zeros written and fdatasync'd up to 4 MiB ahead of the writer. */
static void *zero_thread(void *arg) {
    (void)arg;
    while (!atomic_load(&done)) {
        size_t z = atomic_load(&synced);
        if (z < seg && z < atomic_load(&written) + (4u << 20)) {
            size_t n = seg - z < sizeof zeros ? seg - z : sizeof zeros;
            must(pwrite(fd, zeros, n, z) == (ssize_t)n, "pwrite zeros");
            must(fdatasync(fd) == 0, "fdatasync zeros");
            atomic_store(&synced, z + n);
        } else {
            usleep(100);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s zeroahead|zerosync|recycled|unwritten PATH RECORDS RECORD_BYTES [SEG_MIB]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1], *path = argv[2];
    int n = atoi(argv[3]);
    size_t rec = (size_t)atol(argv[4]);
    seg = (size_t)(argc > 5 ? atol(argv[5]) : 64) << 20;
    must(n > 0 && rec > 0 && rec < seg, "arguments");
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    must(fd >= 0, "open");
    char *buf = malloc(rec);
    double *lat = malloc(n * sizeof(double));
    must(buf && lat, "malloc");
    memset(buf, 7, rec);
    if (!strcmp(mode, "recycled")) {
        for (size_t o = 0; o < seg; o += sizeof zeros)
            must(pwrite(fd, zeros, sizeof zeros, o) == (ssize_t)sizeof zeros, "pwrite");
    } else {
        must(fallocate(fd, 0, 0, seg) == 0, "fallocate");
    }
    must(fsync(fd) == 0, "fsync");
    int zero_ahead = !strcmp(mode, "zeroahead");
    pthread_t zt;
    if (!strcmp(mode, "zerosync")) {
        /* Start with the first 4 MiB in place, as a device would prepare a new segment. */
        size_t first = seg < (4u << 20) ? seg : (4u << 20);
        for (size_t o = 0; o < first; o += sizeof zeros)
            must(pwrite(fd, zeros, sizeof zeros, o) == (ssize_t)sizeof zeros, "pwrite");
        must(fdatasync(fd) == 0, "fdatasync");
        atomic_store(&synced, first);
        must(pthread_create(&zt, NULL, zero_thread, NULL) == 0, "pthread_create");
    }
    long behind = 0;
    size_t off = 0, zeroed = 0;
    double t0 = now_us();
    for (int i = 0; i < n; i++) {
        double a = now_us();
        if (zero_ahead && off + rec > zeroed) {
            size_t from = zeroed > off ? zeroed : (off + 4095) / 4096 * 4096;
            size_t to = (off + rec + 4095) / 4096 * 4096 + (1 << 20);
            if (to > seg) to = seg;
            for (size_t o = from; o < to; o += 65536)
                must(pwrite(fd, zeros, 65536, o) == 65536, "pwrite zeros");
            zeroed = to;
        }
        if (!zero_ahead && !strcmp(mode, "zerosync") && off + rec > atomic_load(&synced))
            behind++;
        must(pwrite(fd, buf, rec, off) == (ssize_t)rec, "pwrite");
        must(fdatasync(fd) == 0, "fdatasync");
        off += rec;
        atomic_store(&written, off);
        if (off + rec > seg) {
            off = 0;
            zeroed = seg;
        }
        lat[i] = now_us() - a;
    }
    double el = now_us() - t0;
    if (!strcmp(mode, "zerosync")) {
        atomic_store(&done, 1);
        must(pthread_join(zt, NULL) == 0, "pthread_join");
    }
    double sum = 0;
    for (int i = 0; i < n; i++) sum += lat[i];
    qsort(lat, n, sizeof(double), cmp);
    printf("%-10s %zu B records: %.0f appends/s, mean %.1f us, p50 %.1f us, p99 %.1f us, "
           "p99.9 %.1f us, appends ahead of the zeros %ld\n",
           mode, rec, n / el * 1e6, sum / n, lat[n / 2], lat[n * 99 / 100], lat[n * 999 / 1000],
           behind);
    unlink(path);
    return 0;
}

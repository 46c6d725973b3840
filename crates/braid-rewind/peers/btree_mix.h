/*
 * The B+-tree mix of REWIND §5.2 (Fig. 7) as crates/braid/src/rewind/btree_mix.rs runs it,
 * for the peer programs (bdb_btree_mix.c, pmdk_btree_mix.c), which plug their store in
 * through struct mix_store.
 *
 * The workload, matched in distribution to btree_mix.rs (the RNG cannot be shared; that file
 * uses Rust's SmallRng seeded 42, this one splitmix64 seeded 42):
 *   - load (not timed): keys 0, 2, 4, ..., 2(records-1) in a uniformly shuffled order
 *     (Fisher-Yates), each with a value of VALUE_SIZE (32) bytes whose first 8 bytes are the
 *     key (little-endian) and the rest zero;
 *   - then `operations` operations, each an update with probability `frac` (independent
 *     Bernoulli draws), else a lookup of a key drawn uniformly from the keys present;
 *   - updates alternate insert, delete, insert, ... starting with an insert; an insert adds
 *     the next new odd key (2*records+3, 2*records+5, ...: ascending, above every loaded key),
 *     a delete removes a key drawn uniformly from the keys present (swap-remove from the
 *     array of present keys, as btree_mix.rs does), so the size stays constant;
 *   - every lookup must find its key (the program fails otherwise).
 *
 * Arguments shared by the peers: DIR RECORDS OPERATIONS FRACTIONS, FRACTIONS comma-separated
 * (e.g. 0,0.1,0.5,1). Each fraction runs on a fresh store; one JSON line is printed per
 * fraction.
 */
#ifndef BRAID_PEERS_BTREE_MIX_H
#define BRAID_PEERS_BTREE_MIX_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define VALUE_SIZE 32

/* What a peer provides: load inserts (may batch), timed operations, lookups. Each returns 0
 * on success (a lookup: 1 if found, 0 if not, -1 on error). */
struct mix_store {
	void *ctx;
	int (*load_begin)(void *ctx);
	int (*load_insert)(void *ctx, uint64_t key, const uint8_t *val);
	int (*load_end)(void *ctx);
	int (*insert)(void *ctx, uint64_t key, const uint8_t *val);
	int (*remove)(void *ctx, uint64_t key);
	int (*lookup)(void *ctx, uint64_t key, uint8_t *out);
};

static uint64_t mix_rng;
/* The number of keys present after the last mix_run. */
static uint64_t mix_final_keys;

static uint64_t mix_rnd(void)
{
	uint64_t z = (mix_rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n) (multiply-shift; the bias is below 2^-40 for these n). */
static uint64_t mix_below(uint64_t n)
{
	return (uint64_t)(((unsigned __int128)mix_rnd() * n) >> 64);
}

/* True with probability p. */
static int mix_bernoulli(double p)
{
	return (double)(mix_rnd() >> 11) * 0x1.0p-53 < p;
}

static double mix_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/*
 * Emulated NVM write latency (REWIND §5: "We set the NVM write latency to 510 processor
 * cycles (150 ns)"; Berkeley DB ran on PMFS and the paper charged "latencies for user-data
 * writes to PMFS and not for PMFS's internal bookkeeping writes"): BRAID_NVM_WRITE_NS
 * nanoseconds (0 if unset) per 64-byte line of file data a peer writes, busy-waited after the
 * write as braid-pmem waits after each persisted line of braid-rewind's pools. A write of
 * [off, off + len) touches the lines floor(off / 64) .. floor((off + len - 1) / 64): as in the
 * paper's emulation, consecutive writes to one line within one call are one NVM write.
 * nvm_lines counts the lines charged since nvm_lines was last reset.
 */
static uint64_t nvm_ns = 0;
static uint64_t nvm_lines = 0;

static inline void nvm_init(void)
{
	const char *e = getenv("BRAID_NVM_WRITE_NS");
	nvm_ns = e ? strtoull(e, 0, 10) : 0;
}

static inline void nvm_spin(uint64_t ns)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &b);
		uint64_t d = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ull +
			     (uint64_t)(b.tv_nsec - a.tv_nsec);
		if (d >= ns)
			return;
	}
}

/* Charge the lines of the file range [off, off + len) just written. */
static inline void nvm_charge(uint64_t off, uint64_t len)
{
	if (len == 0)
		return;
	uint64_t lines = (off + len - 1) / 64 - off / 64 + 1;
	nvm_lines += lines;
	if (nvm_ns)
		nvm_spin(lines * nvm_ns);
}

static void mix_value(uint8_t *val, uint64_t key)
{
	memset(val, 0, VALUE_SIZE);
	for (int i = 0; i < 8; i++)
		val[i] = (uint8_t)(key >> (8 * i));
}

static void mix_die(const char *what)
{
	fprintf(stderr, "btree mix: %s failed\n", what);
	exit(1);
}

/* Load `records` keys into `s`, then run `operations` operations with update fraction
 * `frac`; returns the seconds the operations took. */
static inline double mix_run(const struct mix_store *s, uint64_t records, uint64_t operations,
		      double frac)
{
	uint8_t val[VALUE_SIZE], out[VALUE_SIZE];
	uint64_t n = records, cap = records + operations + 1;
	uint64_t *present = malloc(cap * sizeof(uint64_t));
	if (!present)
		mix_die("malloc");
	mix_rng = 42;
	for (uint64_t k = 0; k < n; k++)
		present[k] = 2 * k;
	uint64_t *order = malloc((n + 1) * sizeof(uint64_t));
	if (!order)
		mix_die("malloc");
	memcpy(order, present, n * sizeof(uint64_t));
	for (uint64_t i = n; i-- > 1;) {
		uint64_t j = mix_below(i + 1), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	if (s->load_begin(s->ctx))
		mix_die("load begin");
	for (uint64_t i = 0; i < n; i++) {
		mix_value(val, order[i]);
		if (s->load_insert(s->ctx, order[i], val))
			mix_die("load insert");
	}
	if (s->load_end(s->ctx))
		mix_die("load end");
	free(order);

	uint64_t next_new = 2 * records + 1;
	int insert_next = 1;
	nvm_lines = 0;
	double t0 = mix_now();
	for (uint64_t op = 0; op < operations; op++) {
		if (!mix_bernoulli(frac)) {
			uint64_t k = present[mix_below(n)];
			if (s->lookup(s->ctx, k, out) != 1)
				mix_die("lookup of a present key");
			continue;
		}
		if (insert_next) {
			next_new += 2;
			mix_value(val, next_new);
			if (s->insert(s->ctx, next_new, val))
				mix_die("insert");
			present[n++] = next_new;
		} else {
			uint64_t i = mix_below(n);
			if (s->remove(s->ctx, present[i]))
				mix_die("delete");
			present[i] = present[--n];
		}
		insert_next = !insert_next;
	}
	double secs = mix_now() - t0;
	mix_final_keys = n;
	free(present);
	return secs;
}

/* Parse "0,0.1,1" into at most `max` fractions; returns how many. */
static int mix_fractions(const char *arg, double *out, int max)
{
	int k = 0;
	const char *p = arg;
	while (*p && k < max) {
		char *end;
		out[k++] = strtod(p, &end);
		if (end == p)
			mix_die("parsing the update fractions");
		p = *end == ',' ? end + 1 : end;
	}
	return k;
}

/* The command line every peer takes: DIR RECORDS OPERATIONS FRACTIONS (at most `max`
 * fractions); returns how many fractions, or exits with the usage. */
static inline int mix_args(int argc, char **argv, uint64_t *records, uint64_t *operations,
		    double *fracs, int max)
{
	if (argc < 5) {
		fprintf(stderr, "usage: %s DIR RECORDS OPERATIONS FRACTIONS\n", argv[0]);
		exit(2);
	}
	*records = strtoull(argv[2], 0, 10);
	*operations = strtoull(argv[3], 0, 10);
	return mix_fractions(argv[4], fracs, max);
}

#endif

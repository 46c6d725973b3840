/*
 * PMDK (libpmemobj) baseline for braid-rewind: 1-word transactions, and inserts and lookups
 * of 1M random u64 keys in a persistent B-tree whose every insert is one transaction.
 * Prints one JSON object. Built and run by scripts/pmdk-bench.sh with the pool on /dev/shm
 * and PMEM_IS_PMEM_FORCE=1 (so libpmem flushes with CLWB/CLFLUSHOPT as on real pmem).
 *
 * The B-tree is a B+-tree of the same node size as braid-rewind's (512-byte nodes, u64
 * keys, 8-byte values, leaves split in halves; braid-rewind's leaves are fingerprinted and
 * unsorted, these keep sorted keys), written the usual PMDK way: TX_ADD_FIELD /
 * pmemobj_tx_add_range on every range an insert modifies, TX_ZNEW for new nodes.
 *
 * usage: pmdk_bench POOLFILE [keys] [word_txs]
 */
#include <libpmemobj.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NODE_KEYS 31 /* (512 - 16) / 16 */

POBJ_LAYOUT_BEGIN(bench);
POBJ_LAYOUT_ROOT(bench, struct root);
POBJ_LAYOUT_TOID(bench, struct node);
POBJ_LAYOUT_END(bench);

struct node {
	uint64_t leaf;
	uint64_t n;
	uint64_t keys[NODE_KEYS];
	uint64_t vals[NODE_KEYS]; /* values (leaf) or children oids' offsets (inner: n+1) */
	uint64_t extra;           /* inner: last child */
};

struct root {
	TOID(struct node) root;
	uint64_t words[4096];
};

static PMEMobjpool *pop;
/* The root object, looked up once: pmemobj_root() takes the pool's root lock on every call,
 * which braid's tree (its header at a known offset) does not pay per operation, and a PMDK
 * program whose root object never changes size keeps the pointer. */
static struct root *RT;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t rng_state = 11;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* An object's address: the pool's base plus its offset (what pmemobj_direct computes). */
static struct node *N(uint64_t off)
{
	return (struct node *)((char *)pop + off);
}

static uint64_t child(struct node *n, uint64_t i)
{
	return i < NODE_KEYS ? n->vals[i] : n->extra;
}

static void set_child(struct node *n, uint64_t i, uint64_t c)
{
	if (i < NODE_KEYS)
		n->vals[i] = c;
	else
		n->extra = c;
}

static uint64_t new_node(int leaf)
{
	PMEMoid o = pmemobj_tx_zalloc(sizeof(struct node), TOID_TYPE_NUM(struct node));
	struct node *n = pmemobj_direct(o);
	n->leaf = leaf;
	return o.off;
}

/* Insert into a non-full subtree rooted at off (inside a transaction). Splits children
 * before descending (top-down splitting). */
static void split_child(struct node *p, uint64_t i)
{
	struct node *c = N(child(p, i));
	uint64_t roff = new_node(c->leaf);
	struct node *r = N(roff);
	uint64_t h = c->n / 2, sep;
	pmemobj_tx_add_range_direct(c, sizeof(*c));
	pmemobj_tx_add_range_direct(p, sizeof(*p));
	if (c->leaf) {
		r->n = c->n - h;
		memcpy(r->keys, c->keys + h, r->n * 8);
		memcpy(r->vals, c->vals + h, r->n * 8);
		c->n = h;
		sep = r->keys[0];
		r->extra = c->extra; /* leaf chain */
		c->extra = roff;
	} else {
		sep = c->keys[h];
		r->n = c->n - h - 1;
		memcpy(r->keys, c->keys + h + 1, r->n * 8);
		for (uint64_t j = 0; j <= r->n; j++)
			set_child(r, j, child(c, h + 1 + j));
		c->n = h;
	}
	for (uint64_t j = p->n; j > i; j--) {
		p->keys[j] = p->keys[j - 1];
		set_child(p, j + 1, child(p, j));
	}
	p->keys[i] = sep;
	set_child(p, i + 1, roff);
	p->n++;
}

static void insert(uint64_t key, uint64_t val)
{
	struct root *rt = RT;
	TX_BEGIN(pop) {
		struct node *n = N(rt->root.oid.off);
		if (n->n == NODE_KEYS) {
			uint64_t nr = new_node(0);
			set_child(N(nr), 0, rt->root.oid.off);
			TX_ADD_FIELD_DIRECT(rt, root);
			rt->root.oid.off = nr;
			split_child(N(nr), 0);
			n = N(nr);
		}
		while (!n->leaf) {
			uint64_t i = 0;
			while (i < n->n && n->keys[i] <= key)
				i++;
			struct node *c = N(child(n, i));
			if (c->n == NODE_KEYS) {
				split_child(n, i);
				if (key >= n->keys[i])
					i++;
			}
			n = N(child(n, i));
		}
		uint64_t i = 0;
		while (i < n->n && n->keys[i] < key)
			i++;
		if (i < n->n && n->keys[i] == key) {
			pmemobj_tx_add_range_direct(&n->vals[i], 8);
			n->vals[i] = val;
		} else {
			pmemobj_tx_add_range_direct(n, sizeof(*n));
			memmove(n->keys + i + 1, n->keys + i, (n->n - i) * 8);
			memmove(n->vals + i + 1, n->vals + i, (n->n - i) * 8);
			n->keys[i] = key;
			n->vals[i] = val;
			n->n++;
		}
	} TX_ONABORT {
		fprintf(stderr, "insert aborted\n");
		exit(1);
	} TX_END
}

static int lookup(uint64_t key, uint64_t *val)
{
	struct node *n = N(RT->root.oid.off);
	while (!n->leaf) {
		uint64_t i = 0;
		while (i < n->n && n->keys[i] <= key)
			i++;
		n = N(child(n, i));
	}
	for (uint64_t i = 0; i < n->n; i++)
		if (n->keys[i] == key) {
			*val = n->vals[i];
			return 1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s POOLFILE [keys] [word_txs]\n", argv[0]);
		return 2;
	}
	uint64_t keys = argc > 2 ? strtoull(argv[2], 0, 10) : 1000000;
	uint64_t wtx = argc > 3 ? strtoull(argv[3], 0, 10) : 1000000;
	remove(argv[1]);
	pop = pmemobj_create(argv[1], POBJ_LAYOUT_NAME(bench), (size_t)1 << 30, 0600);
	if (!pop) {
		perror("pmemobj_create");
		return 1;
	}
	struct root *rt = pmemobj_direct(pmemobj_root(pop, sizeof(struct root)));
	RT = rt;
	TX_BEGIN(pop) {
		TX_ADD_FIELD_DIRECT(rt, root);
		rt->root.oid = pmemobj_tx_zalloc(sizeof(struct node), TOID_TYPE_NUM(struct node));
		N(rt->root.oid.off)->leaf = 1;
	} TX_END

	/* 1-word transactions on random words of a 4096-word array. */
	double t = now();
	for (uint64_t i = 0; i < wtx; i++) {
		uint64_t w = rnd() % 4096;
		TX_BEGIN(pop) {
			pmemobj_tx_add_range_direct(&rt->words[w], 8);
			rt->words[w] = i;
		} TX_END
	}
	double word_s = now() - t;

	/* Raw persisted stores for reference. */
	t = now();
	for (uint64_t i = 0; i < wtx; i++) {
		uint64_t w = rnd() % 4096;
		rt->words[w] = i;
		pmemobj_persist(pop, &rt->words[w], 8);
	}
	double raw_s = now() - t;

	uint64_t *ks = malloc(keys * 8);
	rng_state = 12345;
	for (uint64_t i = 0; i < keys; i++)
		ks[i] = rnd() >> 1;
	t = now();
	for (uint64_t i = 0; i < keys; i++)
		insert(ks[i], ks[i]);
	double ins_s = now() - t;
	uint64_t found = 0, v;
	t = now();
	for (uint64_t i = 0; i < keys; i++)
		found += lookup(ks[i], &v);
	double look_s = now() - t;

	printf("{\"pmdk_version\": \"%d.%d\", \"word_txs\": %llu, \"word_tx_per_sec\": %.0f, "
	       "\"raw_persisted_stores_per_sec\": %.0f, \"keys\": %llu, \"inserts_per_sec\": %.0f, "
	       "\"lookups_per_sec\": %.0f, \"found\": %llu}\n",
	       PMEMOBJ_MAJOR_VERSION, PMEMOBJ_MINOR_VERSION, (unsigned long long)wtx,
	       wtx / word_s, wtx / raw_s, (unsigned long long)keys, keys / ins_s,
	       keys / look_s, (unsigned long long)found);
	pmemobj_close(pop);
	remove(argv[1]);
	return found == keys ? 0 : 1;
}

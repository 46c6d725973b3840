/*
 * PMDK (libpmemobj) beside braid-rewind on REWIND's B+-tree mix (REWIND §5.2, Fig. 7 right):
 * the workload of btree_mix.h (100k records of 32-byte values, then operations of which a
 * fraction are inserts/deletes and the rest lookups), each insert and delete one libpmemobj
 * transaction, on a pool file in DIR (/dev/shm in the benchmark, run with
 * PMEM_IS_PMEM_FORCE=1 so libpmem flushes with CLWB/CLFLUSHOPT as on real pmem).
 *
 * The tree is the B+-tree of crates/braid-rewind/pmdk/pmdk_bench.c (520-byte nodes, u64
 * keys kept sorted, top-down splitting: a full child is split before the descent enters it,
 * leaves split in halves and chained), with two changes the workload needs:
 *   - leaves hold the 32-byte values inline (12 slots of key + value; inner nodes keep 31
 *     keys and 32 children), as braid-rewind's leaves do;
 *   - deletion removes the key from its leaf without merging underfull nodes (lazy
 *     deletion, as braid-rewind's tree does; a leaf may become empty and stays linked).
 * Undo logging the usual PMDK way: pmemobj_tx_add_range_direct on every range a transaction
 * modifies before modifying it (a leaf insert or delete snapshots the count and the shifted
 * keys and values; a split snapshots the old node's count and link and the whole parent),
 * pmemobj_tx_zalloc for new nodes.
 *
 * usage: pmdk_btree_mix DIR RECORDS OPERATIONS FRACTIONS
 * prints one JSON line per update fraction.
 */
#include <libpmemobj.h>
#include <unistd.h>

#include "btree_mix.h"

/* The library's version: the package's when the build passes it (scripts/rewind-peers.sh
 * passes pkg-config's), else libpmemobj's API version. */
#ifndef PMDK_VERSION
#define STR2(x) #x
#define STR(x) STR2(x)
#define PMDK_VERSION "API " STR(PMEMOBJ_MAJOR_VERSION) "." STR(PMEMOBJ_MINOR_VERSION)
#endif

#define NODE_KEYS 31 /* inner: keys, NODE_KEYS + 1 children */
#define LEAF_KEYS 12 /* leaf: (504 - 24) / (8 + VALUE_SIZE) */

POBJ_LAYOUT_BEGIN(mix);
POBJ_LAYOUT_ROOT(mix, struct root);
POBJ_LAYOUT_TOID(mix, struct node);
POBJ_LAYOUT_END(mix);

struct node {
	uint64_t leaf;
	uint64_t n;
	union {
		struct {
			uint64_t keys[NODE_KEYS];
			uint64_t kids[NODE_KEYS + 1]; /* children's offsets */
		} in;
		struct {
			uint64_t next; /* leaf chain */
			uint64_t keys[LEAF_KEYS];
			uint8_t vals[LEAF_KEYS][VALUE_SIZE];
		} lf;
	};
};

struct root {
	uint64_t root; /* the root node's offset */
};

static PMEMobjpool *pop;
static struct root *rt;

static struct node *N(uint64_t off)
{
	return (struct node *)((char *)pop + off);
}

static int full(const struct node *n)
{
	return n->n == (n->leaf ? LEAF_KEYS : NODE_KEYS);
}

static uint64_t new_node(int leaf)
{
	PMEMoid o = pmemobj_tx_zalloc(sizeof(struct node), TOID_TYPE_NUM(struct node));
	N(o.off)->leaf = leaf;
	return o.off;
}

/* Split p's full child i (inside a transaction). */
static void split_child(struct node *p, uint64_t i)
{
	struct node *c = N(p->in.kids[i]);
	uint64_t roff = new_node(c->leaf);
	struct node *r = N(roff);
	uint64_t h = c->n / 2, sep;
	pmemobj_tx_add_range_direct(c, 3 * sizeof(uint64_t)); /* leaf, n, next */
	pmemobj_tx_add_range_direct(p, sizeof(*p));
	if (c->leaf) {
		r->n = c->n - h;
		memcpy(r->lf.keys, c->lf.keys + h, r->n * 8);
		memcpy(r->lf.vals, c->lf.vals + h, r->n * VALUE_SIZE);
		sep = r->lf.keys[0];
		r->lf.next = c->lf.next;
		c->lf.next = roff;
	} else {
		sep = c->in.keys[h];
		r->n = c->n - h - 1;
		memcpy(r->in.keys, c->in.keys + h + 1, r->n * 8);
		memcpy(r->in.kids, c->in.kids + h + 1, (r->n + 1) * 8);
	}
	c->n = h;
	for (uint64_t j = p->n; j > i; j--) {
		p->in.keys[j] = p->in.keys[j - 1];
		p->in.kids[j + 1] = p->in.kids[j];
	}
	p->in.keys[i] = sep;
	p->in.kids[i + 1] = roff;
	p->n++;
}

static uint64_t route(const struct node *n, uint64_t key)
{
	uint64_t i = 0;
	while (i < n->n && n->in.keys[i] <= key)
		i++;
	return i;
}

/* The slot of `key` in leaf n, or of the first larger key. */
static uint64_t slot(const struct node *n, uint64_t key)
{
	uint64_t i = 0;
	while (i < n->n && n->lf.keys[i] < key)
		i++;
	return i;
}

static void tree_insert(uint64_t key, const uint8_t *val)
{
	struct node *n = N(rt->root);
	if (full(n)) {
		uint64_t nr = new_node(0);
		N(nr)->in.kids[0] = rt->root;
		pmemobj_tx_add_range_direct(&rt->root, 8);
		rt->root = nr;
		split_child(N(nr), 0);
		n = N(nr);
	}
	while (!n->leaf) {
		uint64_t i = route(n, key);
		if (full(N(n->in.kids[i]))) {
			split_child(n, i);
			if (key >= n->in.keys[i])
				i++;
		}
		n = N(n->in.kids[i]);
	}
	uint64_t i = slot(n, key);
	if (i < n->n && n->lf.keys[i] == key) {
		pmemobj_tx_add_range_direct(n->lf.vals[i], VALUE_SIZE);
		memcpy(n->lf.vals[i], val, VALUE_SIZE);
		return;
	}
	uint64_t m = n->n - i;
	pmemobj_tx_add_range_direct(&n->n, 8);
	pmemobj_tx_add_range_direct(&n->lf.keys[i], (m + 1) * 8);
	pmemobj_tx_add_range_direct(n->lf.vals[i], (m + 1) * VALUE_SIZE);
	memmove(n->lf.keys + i + 1, n->lf.keys + i, m * 8);
	memmove(n->lf.vals + i + 1, n->lf.vals + i, m * VALUE_SIZE);
	n->lf.keys[i] = key;
	memcpy(n->lf.vals[i], val, VALUE_SIZE);
	n->n++;
}

static struct node *find_leaf(uint64_t key)
{
	struct node *n = N(rt->root);
	while (!n->leaf)
		n = N(n->in.kids[route(n, key)]);
	return n;
}

static int tree_remove(uint64_t key)
{
	struct node *n = find_leaf(key);
	uint64_t i = slot(n, key);
	if (i == n->n || n->lf.keys[i] != key)
		return 0;
	uint64_t m = n->n - i - 1;
	pmemobj_tx_add_range_direct(&n->n, 8);
	if (m) {
		pmemobj_tx_add_range_direct(&n->lf.keys[i], m * 8);
		pmemobj_tx_add_range_direct(n->lf.vals[i], m * VALUE_SIZE);
		memmove(n->lf.keys + i, n->lf.keys + i + 1, m * 8);
		memmove(n->lf.vals + i, n->lf.vals + i + 1, m * VALUE_SIZE);
	}
	n->n--;
	return 1;
}

static int tx_insert(void *c, uint64_t key, const uint8_t *val)
{
	(void)c;
	volatile int ok = 0; /* volatile: set after TX_BEGIN's setjmp */
	TX_BEGIN(pop) {
		tree_insert(key, val);
	} TX_ONCOMMIT {
		ok = 1;
	} TX_END
	return ok ? 0 : -1;
}

static int tx_remove(void *c, uint64_t key)
{
	(void)c;
	volatile int ok = 0, found = 0; /* volatile: set after TX_BEGIN's setjmp */
	TX_BEGIN(pop) {
		found = tree_remove(key);
	} TX_ONCOMMIT {
		ok = 1;
	} TX_END
	return ok && found ? 0 : -1;
}

static int lookup(void *c, uint64_t key, uint8_t *out)
{
	(void)c;
	struct node *n = find_leaf(key);
	uint64_t i = slot(n, key);
	if (i == n->n || n->lf.keys[i] != key)
		return 0;
	memcpy(out, n->lf.vals[i], VALUE_SIZE);
	return 1;
}

/* An empty leaf as the root of a fresh pool. */
static void create_root(void)
{
	rt = pmemobj_direct(pmemobj_root(pop, sizeof(struct root)));
	TX_BEGIN(pop) {
		pmemobj_tx_add_range_direct(&rt->root, 8);
		PMEMoid o = pmemobj_tx_zalloc(sizeof(struct node), TOID_TYPE_NUM(struct node));
		N(o.off)->leaf = 1;
		rt->root = o.off;
	} TX_ONABORT {
		mix_die("creating the root");
	} TX_END
}

/* Walk the leaf chain: the keys must ascend and number what the workload left. */
static void check_leaves(uint64_t expect)
{
	struct node *n = N(rt->root);
	while (!n->leaf)
		n = N(n->in.kids[0]);
	uint64_t count = 0, last = 0;
	for (;;) {
		for (uint64_t i = 0; i < n->n; i++, count++)
			if (count && n->lf.keys[i] <= last)
				mix_die("leaf chain order");
			else
				last = n->lf.keys[i];
		if (!n->lf.next)
			break;
		n = N(n->lf.next);
	}
	if (count != expect)
		mix_die("leaf chain key count");
}

static int nothing(void *c)
{
	(void)c;
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t records, operations;
	double fracs[64];
	int nf = mix_args(argc, argv, &records, &operations, fracs, 64);
	/* Nodes of at least half-full leaves for every key ever inserted, with room to spare. */
	size_t pool_bytes = ((size_t)64 << 20) + (records + operations) * 256;
	const char *force = getenv("PMEM_IS_PMEM_FORCE");
	for (int f = 0; f < nf; f++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/braid-pmdk-mix-%d-%d", argv[1], (int)getpid(), f);
		remove(path);
		pop = pmemobj_create(path, POBJ_LAYOUT_NAME(mix), pool_bytes, 0600);
		if (!pop) {
			fprintf(stderr, "pmemobj_create %s: %s\n", path, pmemobj_errormsg());
			return 1;
		}
		create_root();
		struct mix_store s = {NULL,      nothing,   tx_insert, nothing,
				      tx_insert, tx_remove, lookup};
		double secs = mix_run(&s, records, operations, fracs[f]);
		printf("{\"system\": \"pmdk\", \"update_fraction\": %g, \"records\": %llu, "
		       "\"operations\": %llu, \"seconds\": %.6f, \"ops_per_sec\": %.0f, "
		       "\"library_version\": \"libpmemobj %s\", \"pool_bytes\": %zu, "
		       "\"node_bytes\": %zu, \"value_bytes\": %d, \"pmem_is_pmem_force\": \"%s\", "
		       "\"dir\": \"%s\"}\n",
		       fracs[f], (unsigned long long)records, (unsigned long long)operations, secs,
		       operations / secs, PMDK_VERSION, pool_bytes,
		       sizeof(struct node), VALUE_SIZE, force ? force : "", argv[1]);
		fflush(stdout);
		check_leaves(mix_final_keys);
		pmemobj_close(pop);
		remove(path);
	}
	return 0;
}

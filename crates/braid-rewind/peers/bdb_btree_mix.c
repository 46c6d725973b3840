/*
 * Berkeley DB beside braid-rewind on REWIND's B+-tree mix (REWIND §5.2, Fig. 7 right): the
 * workload of btree_mix.h (100k records of 32-byte values, then operations of which a
 * fraction are inserts/deletes and the rest lookups) on a Berkeley DB B-tree.
 *
 * Configuration (REWIND §5: "Berkeley DB ... deployed as in [Stasis]. The cache and log
 * buffer sizes matched those of Stasis. The lock manager was disabled"):
 *   - a DB_BTREE database in a transactional environment opened with
 *     DB_CREATE | DB_INIT_TXN | DB_INIT_LOG | DB_INIT_MPOOL | DB_PRIVATE: no DB_INIT_LOCK,
 *     so the lock manager is off (one thread; nothing else opens the environment);
 *   - the environment home, the database file and the log live in DIR (the first argument,
 *     /dev/shm in the benchmark: DRAM standing in for persistent memory, as the paper ran
 *     Berkeley DB over PMFS);
 *   - every insert and delete is one transaction committed with the default commit, which
 *     is synchronous: the commit writes the log buffer and flushes the log file (fdatasync)
 *     before it returns, the durable choice (DB_TXN_NOSYNC / DB_TXN_WRITE_NOSYNC would give
 *     up durability on a crash). Lookups are plain DB->get calls outside transactions, as
 *     braid-rewind's lookups are plain reads;
 *   - the paper gives no numbers for the cache and log buffer, so they are chosen here so
 *     that neither limits Berkeley DB: cache 64 MiB in one region (the default is 256 KiB):
 *     the whole tree (about 300k 8-byte keys with 32-byte values, some 20 MB of pages) fits,
 *     so no page is evicted or read back while timing, as for a tree in (persistent)
 *     memory; log buffer 1 MiB (the default is 32 KiB): far more than one transaction's log
 *     records, so the buffer never fills inside a transaction and each commit writes once
 *     (with sync commits every commit flushes the buffer, so a larger one would not help);
 *   - keys are stored big-endian so Berkeley DB's default byte-wise comparison orders them
 *     numerically;
 *   - the load (not timed) runs in transactions of 1,000 inserts, followed by a checkpoint,
 *     so the timed phase starts with a clean cache and an empty log tail;
 *   - NVM write latency as the paper charged it to Berkeley DB on PMFS (§5: "We further
 *     favor the two former systems by only charging latencies for user-data writes to PMFS
 *     and not for PMFS's internal bookkeeping writes"): Berkeley DB's write and pwrite calls
 *     go through bdb_nvm.h's wrappers (db_env_set_func_write / _pwrite), which charge
 *     BRAID_NVM_WRITE_NS per 64-byte line of file data written (btree_mix.h), the latency
 *     braid-rewind pays per persisted line of its pool.
 *
 * usage: bdb_btree_mix DIR RECORDS OPERATIONS FRACTIONS
 * prints one JSON line per update fraction.
 */
#include <db.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "btree_mix.h"
#include "bdb_nvm.h"

#define CACHE_BYTES (64u << 20)
#define LOG_BUFFER_BYTES (1u << 20)
#define LOAD_BATCH 1000

struct bdb {
	DB_ENV *env;
	DB *db;
	DB_TXN *load_txn;
	uint64_t loaded;
};

static void check(int ret, const char *what)
{
	if (ret) {
		fprintf(stderr, "berkeley db: %s: %s\n", what, db_strerror(ret));
		exit(1);
	}
}

static void key_dbt(DBT *k, uint8_t *buf, uint64_t key)
{
	for (int i = 0; i < 8; i++)
		buf[i] = (uint8_t)(key >> (56 - 8 * i));
	memset(k, 0, sizeof(*k));
	k->data = buf;
	k->size = 8;
}

static void val_dbt(DBT *v, const uint8_t *val)
{
	memset(v, 0, sizeof(*v));
	v->data = (void *)val;
	v->size = VALUE_SIZE;
}

static int load_begin(void *c)
{
	struct bdb *b = c;
	b->loaded = 0;
	return b->env->txn_begin(b->env, NULL, &b->load_txn, 0);
}

static int load_insert(void *c, uint64_t key, const uint8_t *val)
{
	struct bdb *b = c;
	uint8_t kb[8];
	DBT k, v;
	key_dbt(&k, kb, key);
	val_dbt(&v, val);
	int ret = b->db->put(b->db, b->load_txn, &k, &v, 0);
	if (ret)
		return ret;
	if (++b->loaded % LOAD_BATCH == 0) {
		if ((ret = b->load_txn->commit(b->load_txn, 0)))
			return ret;
		return b->env->txn_begin(b->env, NULL, &b->load_txn, 0);
	}
	return 0;
}

static int load_end(void *c)
{
	struct bdb *b = c;
	int ret = b->load_txn->commit(b->load_txn, 0);
	b->load_txn = NULL;
	return ret ? ret : b->env->txn_checkpoint(b->env, 0, 0, DB_FORCE);
}

static int insert(void *c, uint64_t key, const uint8_t *val)
{
	struct bdb *b = c;
	uint8_t kb[8];
	DBT k, v;
	DB_TXN *t;
	key_dbt(&k, kb, key);
	val_dbt(&v, val);
	int ret = b->env->txn_begin(b->env, NULL, &t, 0);
	if (ret)
		return ret;
	if ((ret = b->db->put(b->db, t, &k, &v, 0))) {
		t->abort(t);
		return ret;
	}
	return t->commit(t, 0);
}

static int remove_key(void *c, uint64_t key)
{
	struct bdb *b = c;
	uint8_t kb[8];
	DBT k;
	DB_TXN *t;
	key_dbt(&k, kb, key);
	int ret = b->env->txn_begin(b->env, NULL, &t, 0);
	if (ret)
		return ret;
	if ((ret = b->db->del(b->db, t, &k, 0))) {
		t->abort(t);
		return ret;
	}
	return t->commit(t, 0);
}

static int lookup(void *c, uint64_t key, uint8_t *out)
{
	struct bdb *b = c;
	uint8_t kb[8];
	DBT k, v;
	key_dbt(&k, kb, key);
	memset(&v, 0, sizeof(v));
	v.data = out;
	v.ulen = VALUE_SIZE;
	v.flags = DB_DBT_USERMEM;
	int ret = b->db->get(b->db, NULL, &k, &v, 0);
	if (ret == DB_NOTFOUND)
		return 0;
	return ret ? -1 : 1;
}

/* Remove the files in `dir` (the environment's: log, database, regions), then `dir`. */
static void remove_home(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char path[4096];
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	uint64_t records, operations;
	double fracs[64];
	int nf = mix_args(argc, argv, &records, &operations, fracs, 64);
	bdb_nvm_install();
	for (int f = 0; f < nf; f++) {
		char home[4096];
		snprintf(home, sizeof(home), "%s/braid-bdb-mix-%d-%d", argv[1], (int)getpid(), f);
		remove_home(home);
		if (mkdir(home, 0700))
			check(errno, "mkdir");
		struct bdb b = {0};
		check(db_env_create(&b.env, 0), "db_env_create");
		check(b.env->set_cachesize(b.env, 0, CACHE_BYTES, 1), "set_cachesize");
		check(b.env->set_lg_bsize(b.env, LOG_BUFFER_BYTES), "set_lg_bsize");
		check(b.env->open(b.env, home,
				  DB_CREATE | DB_INIT_TXN | DB_INIT_LOG | DB_INIT_MPOOL | DB_PRIVATE,
				  0600),
		      "env open");
		check(db_create(&b.db, b.env, 0), "db_create");
		check(b.db->open(b.db, NULL, "mix.db", NULL, DB_BTREE, DB_CREATE | DB_AUTO_COMMIT,
				 0600),
		      "db open");
		uint32_t page = 0;
		check(b.db->get_pagesize(b.db, &page), "get_pagesize");
		struct mix_store s = {&b,     load_begin, load_insert, load_end,
				      insert, remove_key, lookup};
		double secs = mix_run(&s, records, operations, fracs[f]);
		uint64_t lines = nvm_lines;
		printf("{\"system\": \"berkeley-db\", \"update_fraction\": %g, \"records\": %llu, "
		       "\"operations\": %llu, \"seconds\": %.6f, \"ops_per_sec\": %.0f, "
		       "\"library_version\": \"%s\", \"cache_bytes\": %u, "
		       "\"log_buffer_bytes\": %u, \"page_bytes\": %u, \"value_bytes\": %d, "
		       "\"sync_commit\": true, \"lock_manager\": false, \"nvm_write_ns\": %llu, "
		       "\"nvm_lines_per_op\": %.3f, \"dir\": \"%s\"}\n",
		       fracs[f], (unsigned long long)records, (unsigned long long)operations, secs,
		       operations / secs, DB_VERSION_STRING, CACHE_BYTES, LOG_BUFFER_BYTES, page,
		       VALUE_SIZE, (unsigned long long)nvm_ns,
		       operations ? (double)lines / (double)operations : 0.0, argv[1]);
		fflush(stdout);
		check(b.db->close(b.db, 0), "db close");
		check(b.env->close(b.env, 0), "env close");
		remove_home(home);
	}
	return 0;
}

/*
 * Berkeley DB beside braid-rewind on REWIND's rollback and recovery experiment (REWIND §5.2,
 * Fig. 8), as crates/braid/src/rewind/recovery.rs runs it:
 *   - a B-tree of RECORDS keys 0, 2, 4, ... (32-byte values), loaded in transactions of
 *     1,000 and checkpointed (not timed);
 *   - rollback (Fig. 8 left): one transaction of N operations, inserts of new odd keys
 *     (ascending) alternating with deletes of keys drawn uniformly from 0, 2, ...,
 *     2(RECORDS-1) (a delete of a key already deleted finds nothing, as in recovery.rs),
 *     then DB_TXN->abort, timed;
 *   - recovery (Fig. 8 right): in a child process the same kind of operations, N in all, in
 *     transactions of OPS_PER_TX (the paper: "a new transaction every 200 operations") that
 *     are never committed; the log is flushed (as braid-rewind's records are persistent when
 *     the crash comes) and the child exits without closing anything (the crash). The parent
 *     then opens the environment with DB_RECOVER, timed: Berkeley DB's recovery rolls the
 *     unfinished transactions back. The tree must hold exactly the loaded keys afterwards.
 * The environment is bdb_btree_mix.c's (DB_INIT_TXN | DB_INIT_LOG | DB_INIT_MPOOL, no lock
 * manager, 64 MiB cache, 1 MiB log buffer, in DIR: /dev/shm in the benchmark), and every
 * write and pwrite of Berkeley DB is charged BRAID_NVM_WRITE_NS per 64-byte line
 * (bdb_nvm.h), the NVM latency braid-rewind pays per persisted line.
 *
 * usage: bdb_rollback_recovery DIR RECORDS OPS_PER_TX N[,N...]
 * prints one JSON line per N.
 */
#include <db.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "btree_mix.h"
#include "bdb_nvm.h"

#define CACHE_BYTES (64u << 20)
#define LOG_BUFFER_BYTES (1u << 20)
#define LOAD_BATCH 1000
#define ENV_FLAGS (DB_CREATE | DB_INIT_TXN | DB_INIT_LOG | DB_INIT_MPOOL | DB_PRIVATE)

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

static void open_env(const char *home, uint32_t extra, DB_ENV **env, DB **db)
{
	check(db_env_create(env, 0), "db_env_create");
	check((*env)->set_cachesize(*env, 0, CACHE_BYTES, 1), "set_cachesize");
	check((*env)->set_lg_bsize(*env, LOG_BUFFER_BYTES), "set_lg_bsize");
	check((*env)->open(*env, home, ENV_FLAGS | extra, 0600), "env open");
	check(db_create(db, *env, 0), "db_create");
	check((*db)->open(*db, NULL, "fig8.db", NULL, DB_BTREE, DB_CREATE | DB_AUTO_COMMIT, 0600),
	      "db open");
}

static void put(DB *db, DB_TXN *t, uint64_t key)
{
	uint8_t kb[8], val[VALUE_SIZE];
	DBT k, v;
	key_dbt(&k, kb, key);
	mix_value(val, key);
	memset(&v, 0, sizeof(v));
	v.data = val;
	v.size = VALUE_SIZE;
	check(db->put(db, t, &k, &v, 0), "put");
}

static void del(DB *db, DB_TXN *t, uint64_t key)
{
	uint8_t kb[8];
	DBT k;
	key_dbt(&k, kb, key);
	int ret = db->del(db, t, &k, 0);
	if (ret && ret != DB_NOTFOUND)
		check(ret, "del");
}

static void load(DB_ENV *env, DB *db, uint64_t records)
{
	uint64_t *order = malloc(records * sizeof(uint64_t));
	if (!order)
		mix_die("malloc");
	for (uint64_t k = 0; k < records; k++)
		order[k] = 2 * k;
	for (uint64_t i = records; i-- > 1;) {
		uint64_t j = mix_below(i + 1), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	DB_TXN *t;
	check(env->txn_begin(env, NULL, &t, 0), "txn_begin");
	for (uint64_t i = 0; i < records; i++) {
		put(db, t, order[i]);
		if ((i + 1) % LOAD_BATCH == 0) {
			check(t->commit(t, 0), "commit");
			check(env->txn_begin(env, NULL, &t, 0), "txn_begin");
		}
	}
	check(t->commit(t, 0), "commit");
	check(env->txn_checkpoint(env, 0, 0, DB_FORCE), "checkpoint");
	free(order);
}

/* `n` operations of transaction `t`: inserts of new keys alternating with deletes. */
static void mixed_ops(DB *db, DB_TXN *t, uint64_t n, uint64_t records, uint64_t *next)
{
	for (uint64_t i = 0; i < n; i++) {
		if (i % 2 == 0) {
			*next += 2;
			put(db, t, *next);
		} else {
			del(db, t, 2 * mix_below(records));
		}
	}
}

/* Keys in the database (a cursor walk). */
static uint64_t count_keys(DB *db)
{
	DBC *c;
	DBT k, v;
	uint64_t n = 0;
	check(db->cursor(db, NULL, &c, 0), "cursor");
	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	while (c->get(c, &k, &v, DB_NEXT) == 0)
		n++;
	check(c->close(c), "cursor close");
	return n;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: %s DIR RECORDS OPS_PER_TX N[,N...]\n", argv[0]);
		return 2;
	}
	uint64_t records = strtoull(argv[2], 0, 10);
	uint64_t per_tx = strtoull(argv[3], 0, 10);
	double ns[64];
	int nn = mix_fractions(argv[4], ns, 64);
	if (records == 0 || per_tx == 0)
		mix_die("parsing the arguments");
	bdb_nvm_install();
	for (int i = 0; i < nn; i++) {
		uint64_t n = (uint64_t)ns[i];
		char home[4096];
		snprintf(home, sizeof(home), "%s/braid-bdb-fig8-%d-%d", argv[1], (int)getpid(), i);
		remove_home(home);
		if (mkdir(home, 0700))
			check(errno, "mkdir");
		mix_rng = 5;
		DB_ENV *env;
		DB *db;
		open_env(home, 0, &env, &db);
		load(env, db, records);
		uint64_t next = 2 * records + 1;
		/* Rollback of one transaction of n operations. */
		DB_TXN *t;
		check(env->txn_begin(env, NULL, &t, 0), "txn_begin");
		mixed_ops(db, t, n, records, &next);
		nvm_lines = 0;
		double t0 = mix_now();
		check(t->abort(t), "abort");
		double rollback = mix_now() - t0;
		uint64_t rollback_lines = nvm_lines;
		if (count_keys(db) != records)
			mix_die("the rollback (keys differ from the loaded ones)");
		/* The crash: unfinished transactions in a child that exits without closing. */
		fflush(stdout);
		pid_t child = fork();
		if (child < 0)
			check(errno, "fork");
		if (child == 0) {
			uint64_t left = n;
			while (left > 0) {
				uint64_t k = left < per_tx ? left : per_tx;
				check(env->txn_begin(env, NULL, &t, 0), "txn_begin");
				mixed_ops(db, t, k, records, &next);
				left -= k;
			}
			check(env->log_flush(env, NULL), "log_flush");
			_exit(0);
		}
		int status = 0;
		if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			mix_die("the child that crashes");
		/* This process's handles describe the environment before the crash: drop them
		 * without writing anything (a private environment's regions are this process's
		 * memory, and the child's log is what recovery reads). */
		uint64_t transactions = (n + per_tx - 1) / per_tx;
		nvm_lines = 0;
		t0 = mix_now();
		DB_ENV *renv;
		DB *rdb;
		open_env(home, DB_RECOVER, &renv, &rdb);
		double recovery = mix_now() - t0;
		uint64_t recovery_lines = nvm_lines;
		if (count_keys(rdb) != records)
			mix_die("recovery (keys differ from the loaded ones)");
		printf("{\"system\": \"berkeley-db\", \"records\": %llu, \"operations\": %llu, "
		       "\"ops_per_tx\": %llu, \"rollback_ms\": %.4f, \"recovery_ms\": %.4f, "
		       "\"recovered_transactions\": %llu, \"rollback_nvm_lines\": %llu, "
		       "\"recovery_nvm_lines\": %llu, \"nvm_write_ns\": %llu, "
		       "\"library_version\": \"%s\", \"cache_bytes\": %u, \"log_buffer_bytes\": %u, "
		       "\"lock_manager\": false, \"dir\": \"%s\"}\n",
		       (unsigned long long)records, (unsigned long long)n,
		       (unsigned long long)per_tx, rollback * 1e3, recovery * 1e3,
		       (unsigned long long)transactions, (unsigned long long)rollback_lines,
		       (unsigned long long)recovery_lines, (unsigned long long)nvm_ns,
		       DB_VERSION_STRING, CACHE_BYTES, LOG_BUFFER_BYTES, argv[1]);
		fflush(stdout);
		check(rdb->close(rdb, 0), "db close");
		check(renv->close(renv, 0), "env close");
		remove_home(home);
	}
	return 0;
}

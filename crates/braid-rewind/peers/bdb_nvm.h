/*
 * Berkeley DB's file writes charged the emulated NVM write latency (btree_mix.h's
 * nvm_charge), as REWIND §5 charged Berkeley DB's user-data writes to PMFS: every write and
 * pwrite Berkeley DB makes (log records, database pages) goes through these wrappers,
 * installed with db_env_set_func_write / db_env_set_func_pwrite before any environment is
 * created. A plain write is charged at the file offset it wrote at (read with lseek first).
 */
#ifndef BRAID_PEERS_BDB_NVM_H
#define BRAID_PEERS_BDB_NVM_H

#include <db.h>
#include <sys/types.h>
#include <unistd.h>

static ssize_t bdb_nvm_pwrite(int fd, const void *buf, size_t n, off_t off)
{
	ssize_t w = pwrite(fd, buf, n, off);
	if (w > 0)
		nvm_charge((uint64_t)off, (uint64_t)w);
	return w;
}

static ssize_t bdb_nvm_write(int fd, const void *buf, size_t n)
{
	off_t off = lseek(fd, 0, SEEK_CUR);
	ssize_t w = write(fd, buf, n);
	if (w > 0 && off >= 0)
		nvm_charge((uint64_t)off, (uint64_t)w);
	return w;
}

/* Read BRAID_NVM_WRITE_NS and route Berkeley DB's writes through the wrappers. */
static void bdb_nvm_install(void)
{
	nvm_init();
	if (db_env_set_func_pwrite(bdb_nvm_pwrite) || db_env_set_func_write(bdb_nvm_write)) {
		fprintf(stderr, "berkeley db: cannot install the write wrappers\n");
		exit(1);
	}
}

#endif

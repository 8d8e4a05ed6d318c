/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * ldb-dump DIR: every key of the LevelDB in DIR, hex, a tab, and the
 * value in hex when it is shorter than 64 KB ("-" otherwise).  For
 * suites that check rows no route shows, with nginx stopped (LevelDB
 * allows one process).  A dump that could not read every row (a
 * damaged table, a read error) exits 1: part of the rows is never
 * given as all of them.  Built by the suite that needs it:
 *
 *     cc -o ldb-dump t/helpers/ldb-dump.c -lleveldb
 */


#include <stdio.h>
#include <stdlib.h>

#include <leveldb/c.h>


static void
hex(const char *p, size_t len)
{
    size_t  i;

    for (i = 0; i < len; i++) {
        printf("%02x", (unsigned char) p[i]);
    }
}


int
main(int argc, char **argv)
{
    char                      *err;
    size_t                     klen, vlen;
    const char                *k, *v;
    leveldb_t                 *db;
    leveldb_options_t         *opt;
    leveldb_iterator_t        *it;
    leveldb_readoptions_t     *ropt;

    if (argc != 2) {
        fprintf(stderr, "usage: ldb-dump DIR\n");
        return 2;
    }

    err = NULL;
    opt = leveldb_options_create();
    leveldb_options_set_create_if_missing(opt, 0);

    db = leveldb_open(opt, argv[1], &err);
    if (err != NULL) {
        fprintf(stderr, "ldb-dump: %s\n", err);
        return 1;
    }

    ropt = leveldb_readoptions_create();
    leveldb_readoptions_set_verify_checksums(ropt, 1);
    it = leveldb_create_iterator(db, ropt);

    for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it);
         leveldb_iter_next(it))
    {
        k = leveldb_iter_key(it, &klen);
        v = leveldb_iter_value(it, &vlen);

        hex(k, klen);
        printf("\t");

        if (vlen < 65536) {
            hex(v, vlen);

        } else {
            printf("-");
        }

        printf("\n");
    }

    /* the iteration ends at an error as at the last row: which was it */

    leveldb_iter_get_error(it, &err);

    if (err != NULL) {
        fprintf(stderr, "ldb-dump: %s\n", err);
        return 1;
    }

    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "ldb-dump: writing the rows failed\n");
        return 1;
    }

    leveldb_iter_destroy(it);
    leveldb_readoptions_destroy(ropt);
    leveldb_close(db);
    leveldb_options_destroy(opt);

    return 0;
}
